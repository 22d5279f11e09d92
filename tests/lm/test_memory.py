"""The memory estimate of a language-model run: exact parameter counts, an estimate that errs
high, and a refusal in one line when the device cannot hold the run."""

import pytest
import torch

from rnnbench import memory as shared_memory
from rnnbench.errors import UsageError
from rnnbench.lm.loop import train_step
from rnnbench.lm.memory import check_fits, num_parameters, training_bytes
from rnnbench.lm.run import build_model, make_optimizer


@pytest.mark.parametrize("rnn, layers, tied", [("LSTM", 1, False), ("LSTM", 3, True), ("GRU", 2, False),
                                                ("RNN_TANH", 1, True), ("RNN_RELU", 2, False)])
def test_parameter_count_matches_the_built_model(tiny, rnn, layers, tied):
    config = tiny(rnn=rnn, num_layers=layers, tied=tied, emb_size=12 if not tied else 16)
    model = build_model(config, vocab_size=37)
    assert num_parameters(config, 37) == sum(p.numel() for p in model.parameters())


def test_the_weights_estimate_covers_parameters_gradients_and_adam_state(tiny):
    config = tiny(num_layers=2, optimizer="adam")
    model = build_model(config, 50)
    optimizer = make_optimizer(config, model)
    x = torch.randint(0, 50, (config.bptt, config.batch_size))
    train_step(model, optimizer, torch.amp.GradScaler("cpu", enabled=False), x, x, model.init_hidden(8),
               config, torch.device("cpu"))
    held = [p for p in model.parameters()] + [p.grad for p in model.parameters()]
    held += [t for state in optimizer.state.values() for t in state.values() if t.dim() > 0]
    measured = sum(t.numel() * t.element_size() for t in held)
    estimate = training_bytes(config, 50)["weights"]
    assert measured <= estimate <= 1.1 * measured  # high, but not wildly
    sgd = training_bytes(tiny(num_layers=2, optimizer="sgd"), 50)["weights"]
    assert sgd == estimate // 2  # no optimiser state: parameters and gradients only


def test_the_estimate_grows_with_every_size(tiny):
    base = training_bytes(tiny(), 1000, tokens=10_000)
    assert base["total"] == base["weights"] + base["activations"] + base["data"]
    assert base["data"] == 8 * 10_000
    for change in (dict(hidden_size=32), dict(emb_size=32), dict(num_layers=2), dict(batch_size=16),
                   dict(bptt=32)):
        assert training_bytes(tiny(**change), 1000)["total"] > training_bytes(tiny(), 1000)["total"], change
    assert training_bytes(tiny(), 2000)["activations"] > base["activations"]  # the logits grow with V
    bf16 = training_bytes(tiny(amp="bf16"), 1000)
    assert bf16["activations"] < base["activations"] and bf16["weights"] > base["weights"]  # + a 2-byte copy


def test_check_fits_refuses_in_one_line(monkeypatch, tiny):
    config = tiny()
    need = training_bytes(config, 100)["total"]
    monkeypatch.setattr(shared_memory, "available_bytes", lambda device: need - 1)
    with pytest.raises(UsageError, match=r"needs about .* GiB of host memory .* available; lower") as info:
        check_fits(config, 100, torch.device("cpu"))
    assert "\n" not in str(info.value)
    monkeypatch.setattr(shared_memory, "available_bytes", lambda device: need)
    check_fits(config, 100, torch.device("cpu"))
    monkeypatch.setattr(shared_memory, "available_bytes", lambda device: None)  # unknown: not refused
    check_fits(tiny(hidden_size=200_000), 100, torch.device("cpu"))


def test_check_fits_on_cuda_checks_the_gpu_and_the_host(monkeypatch, tiny):
    """The model is built on the host first, so its parameters must fit there too."""
    config = tiny()
    total, params = training_bytes(config, 100)["total"], 4 * num_parameters(config, 100)
    free = {"cuda": total - 1, "cpu": 10 * total}
    monkeypatch.setattr(shared_memory, "available_bytes", lambda device: free[device])
    with pytest.raises(UsageError, match="of GPU memory"):
        check_fits(config, 100, torch.device("cuda"))
    free.update(cuda=total, cpu=params - 1)
    with pytest.raises(UsageError, match="of host memory"):
        check_fits(config, 100, torch.device("cuda"))
    free["cpu"] = params
    check_fits(config, 100, torch.device("cuda"))
