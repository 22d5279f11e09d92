import sys, torch
a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
assert a.keys() == b.keys()
diff = [k for k in a if not all(torch.equal(x, y) for x, y in zip(a[k], b[k]))]
print(f"{len(a)} cases, {len(diff)} not bit for bit equal")
for k in diff[:20]:
    print("  differs:", k, max((x - y).abs().max().item() for x, y in zip(a[k], b[k])))
