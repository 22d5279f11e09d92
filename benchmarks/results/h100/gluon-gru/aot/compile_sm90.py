"""Compile the Gluon LSTM and GRU forward kernels for sm_90 (no GPU needed; Triton 3.6) and print
their resource use (registers, spills, shared memory, wgmma count and waits, MUFU tanh) per dtype,
shape, saving, projection ahead and h0.

    python benchmarks/results/h100/gluon-gru/aot/compile_sm90.py [lstm] [gru]      # with Triton 3.6

Environment: SRC (a source tree to compile instead of this checkout's src/, e.g. a patched copy),
RELEASE (that tree's RELEASE constexpr, the exit-count experiment of release.patch), DTYPES,
CONFIGS, FLAGS, BIAS, MAXNREG, DUMP (a folder for SASS, TTGIR and PTX). Written by a helper session
for ops/gru/gluon.py (2026-11-26), kept as it ran."""
import os
import re
import sys
from pathlib import Path
sys.path.insert(0, os.environ.get("SRC") or str(Path(__file__).resolve().parents[5] / "src"))
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from rnnbench.ops.aot import resource_usage

F32_PTRS = {"c_buf_ptr", "gates_ptr", "saved_ptr"}
I32_PTRS = {"counters_ptr", "ready_ptr"}
CONFIGS = tuple(eval(os.environ["CONFIGS"])) if os.environ.get("CONFIGS") else ((768, 16, False), (768, 16, True), (1024, 32, True), (512, 32, False), (300, 16, True))


def compile_one(K, dt, H, BB, save, ahead, extra, h0=True):
    names = K.arg_names
    P = 256 if H > 256 else max(16, 1 << (H - 1).bit_length())
    c = dict(H=H, HAS_BIAS=os.environ.get("BIAS", "1") == "1", HAS_H0=h0, SAVE=save, AHEAD=ahead, BLOCK_B=BB, PIECE=P,
             PIECES=-(-H // P), num_warps=4, **extra)
    sig = {}
    for n in names:
        if n in c:
            sig[n] = "constexpr"
        elif n.endswith("_ptr"):
            sig[n] = "*i32" if n in I32_PTRS else "*fp32" if n in F32_PTRS else f"*{dt}"
        else:
            sig[n] = "i32"
    attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(names) if n.endswith("_ptr")}
    src = GluonASTSource(K, sig, constexprs={(names.index(k),): v for k, v in c.items() if k in names}, attrs=attrs)
    options = {"num_warps": 4}
    if os.environ.get("MAXNREG"):
        options["maxnreg"] = int(os.environ["MAXNREG"])
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
    dump = os.environ.get("DUMP")
    if dump:  # the SASS without addresses, to diff one compile against another
        from rnnbench.ops.aot import sass
        text = re.sub(r"/\*[0-9a-f]{4}\*/", "", sass(k))
        text = re.sub(r"/\* 0x[0-9a-f]+ \*/", "", text)
        Path(dump).mkdir(parents=True, exist_ok=True)
        stem = f"{K.fn.__name__}-{dt}-{H}-{BB}-{int(save)}-{int(ahead)}-{int(h0)}"
        Path(dump, stem + ".sass").write_text(text)
        Path(dump, stem + ".ttgir").write_text(k.asm["ttgir"])
        Path(dump, stem + ".ptx").write_text(k.asm["ptx"])
    return resource_usage(k)


def main(which):
    rows = []
    for cell in which:
        if cell == "lstm":
            from rnnbench.ops.lstm.gluon import lstm_forward_gluon_kernel as K
            extra = dict(HAS_C0=True, RELEASE=int(os.environ.get("RELEASE", "0")))
        else:
            from rnnbench.ops.gru.gluon import gru_forward_gluon_kernel as K
            extra = dict(RELEASE=int(os.environ.get("RELEASE", "0")))
        for dt in os.environ.get("DTYPES", "fp16,bf16").split(","):
            for H, BB, save in CONFIGS:
                for ahead, h0 in eval(os.environ.get("FLAGS", "((False, True), (True, True), (False, False))")):
                    u = compile_one(K, dt, H, BB, save, ahead, extra, h0)
                    print(f"{cell} {dt} H={H} B={BB} save={int(save)} ahead={int(ahead)} h0={int(h0)}: reg={u.get('reg')} "
                          f"stack={u.get('stack')} ldl={u.get('ldl')} stl={u.get('stl')} smem={u['shared']} "
                          f"hgmma={u.get('hgmma')} waits={u.get('wgmma_waits')} mufu={u.get('mufu_tanh')}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["lstm", "gru"])
