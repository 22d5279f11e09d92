"""Drop-in ``LSTM``, ``GRU`` and ``RNN`` running rnnbench's Triton kernels (``rnnbench.ops``).

They are subclasses of the torch.nn modules: same constructor arguments, same parameters under
the same names (a ``torch.nn.LSTM`` state_dict loads unchanged, and back), same
``forward(input, hx=None) -> (output, h_n)``. One more argument, ``backend``:

- ``"auto"`` (default): the Triton kernels where they apply (CUDA tensors, float32 / bfloat16 /
  float16, no ``proj_size``, a batch and width the grid can hold) and cuDNN was not measured faster
  (large batch × hidden: ``rnnbench.ops.preference``); anywhere else PyTorch's own path, announced
  once per reason with ``warnings.warn`` -- never a silent change of results.
- ``"triton"``: the kernels or an error. With ``TRITON_INTERPRET=1`` set before the kernels are
  first imported, they run on CPU tensors under Triton's interpreter (one program per batch block).
- ``"torch"``: torch.nn's own forward (cuDNN on CUDA).

Under ``torch.autocast`` the kernels run in autocast's dtype, as torch.nn's layers do there.
Float32 follows torch's TF32 switch for matmuls (``torch.backends.cuda.matmul.allow_tf32``, as
issue 8 asks; not the one torch.nn's recurrent layers follow on cuDNN,
``torch.backends.cudnn.rnn.fp32_precision``, TF32 by default, so with torch's defaults
torch.nn.LSTM multiplies in TF32 and this module in strict fp32:
``benchmarks/results/h200/fp32-defaults``): TF32 products where it is on (the LSTM's and GRU's
forward at hidden 1024 on fp16 operands instead, which keep a TF32 operand's 11 significant bits,
under power-of-two scales that keep them in range: ``Plan.half_operands``); otherwise fp32-accurate products on tensor cores from split operands (3xTF32;
3xFP16 where a forward streams its weights, ``Plan.split_fp16``, and in a large layer's input
projection and gradients, ``ops/split_products.py``; docs/kernels.md; within
``rnnbench.ops.recurrence.strict_fp32("ieee")``, IEEE products on the FMA units).
An eager call on CUDA, its tensors contiguous and 16-byte aligned, no batch_first, no
autocast, is recorded on its first call of a shape and setting and replayed
on the next (``rnnbench.ops.replay``: the same launches and allocations without the Python that
decides them; the same results, bit for bit); with gradients wanted, its forward and its backward
each (``rnnbench.ops.replayed_layer``). A module of several layers or two directions is replayed
layer by layer: its call takes the normal path around its layers (the time reversal, the
concatenations, dropout), each layer and direction recorded and replayed on its own where its
tensors are aligned. A call whose normal path does any work but our launches
and allocations (cuBLAS' projection, a copy) is refused as a recording and stays on that path.
Variable-length batches, two ways: a ``PackedSequence`` input (as torch.nn takes it; the output is
packed again, in the input's order), or the padded batch with ``lengths=`` (``[B]`` integers, one
per sequence; the output comes padded with zeros, as ``pad_packed_sequence`` would give it, and no
packing is done at all). The kernels run each sequence with its own length: past its end it keeps
its state and computes nothing that counts, so the output, ``h_n`` and every gradient are what
torch.nn gives the packed batch; the reverse direction reads each sequence from its own last step.
Dropout between layers is applied in training mode as torch.nn does (a different random mask).
``recurrent_dropout=p`` (what cuDNN has no place for): in training mode each call draws a mask
``[B, H]`` a layer and direction (0 with probability p, else ``1 / (1 - p)``) that multiplies
``h_{t-1}`` where the recurrent product reads it, at every step (Gal and Ghahramani, 2016; Keras'
``recurrent_dropout``); the output and final states are ``h`` itself. On the kernels
(``rnnbench.ops.recurrence.DROPOUT_PLAN``); CPU tensors and ``backend="torch"`` on a loop of torch's
cells (``rnnbench.ops.loop``). Never replayed; off in eval mode.
``layer_norm=True`` (what cuDNN has no place for either): each layer and direction normalized as in
Ba, Kiros and Hinton's "Layer Normalization" (2016) and haste's ``LayerNormLSTM``/``LayerNormGRU``
(``rnnbench.reference.LayerNormWeights``): the products ``x W_ih^T`` and ``h W_hh^T`` each over
their ``G*H`` pre-activations, times gains ``ln_weight_ih_l{k}``, ``ln_weight_hh_l{k}`` ``[G*H]``,
before ``b_ih``/``b_hh``; the LSTM's ``c_t`` where it enters ``tanh`` (``ln_weight_c_l{k}``,
``ln_bias_c_l{k}`` ``[H]``). The gains are parameters beside torch.nn's (ones and zeros to start;
torch.nn's state_dict loads with ``strict=False``). A call without recurrent dropout runs on the
kernels (``recurrence.layer_norm_launch_or_refusal``): without gradients every cell's forward at
any width (every norm in the kernel, so such a call is recorded and replayed as any other; where
one program holds a batch row its statistics are its own sums, ``LAYER_NORM_PLAN``: LSTM and GRU
to hidden 64 in fp32, 128 in 16-bit, the RNN to 128 and 256 on an H200; past those the exchange
plans gather each program's share after a grid barrier), with them every cell's training at any
width as well (``ops/layer_norm.py``: the forward saving, the backward through every norm, its
sums exchanged the same way past one program's reach; never replayed). Any other (recurrent
dropout, CPU tensors) runs on
``rnnbench.ops.loop``'s loop, with lengths and PackedSequence too (under
``"auto"`` after the fallback's one warning; ``"triton"`` refuses it).
Inside a ``torch.compile``-d model the module runs eagerly between the compiled graphs, as
torch.nn's recurrent modules do there (``torch._dynamo.config.allow_rnn`` is off by default: the
compiler breaks its graph at them).
With gradients wanted, ``output`` is a view of the hidden states the layer keeps for its backward,
so autograd refuses to modify it in place (``RuntimeError`` at the in-place call); torch.nn on
cuDNN lets the modification happen and refuses at the backward instead (cuDNN's backward keeps its
output too: ``CudnnRnnBackward0``). Under ``no_grad`` or ``inference_mode``, and for ``h_n`` and
``c_n`` always, in-place changes are allowed.
"""

from __future__ import annotations

import functools
import importlib.util
import operator
import os
import sys
import warnings
import weakref

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

BACKENDS = ("auto", "triton", "torch")
_WARNED: set[tuple[str, str]] = set()
# Each module's replays of its eager calls (``ops/replay.py``; with gradients,
# ``ops/replayed_layer.py``, keyed with "train" last), by the call's key
# (:meth:`_KernelPath._replay_key`), each ``(weights, launch, LayerReplays)``: the weights and
# launch plans it was recorded with, and its replays and refused recordings; a stacked module's
# (several layers, or both directions) a tuple of ``LayerReplays`` in that place, one a layer and
# direction in the order of ``_flat_weights``, its calls the normal path around them, each layer
# replayed (``ops/replayed_layer.run_layer``; a key whose forward
# recording was refused ``replayed_layer.ATTEMPTS`` times takes the normal path unrecorded: a
# recording costs every call it wraps). Beside the module, not in it (a replay holds C launchers,
# which neither pickle nor copy), and gone with it.
_REPLAYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_MAX_REPLAYS = 16  # keys a module keeps (then it starts again)
# Modules whose weights were off a 16-byte boundary or strided when a call was to be recorded (torch.nn's
# flattened weights at some widths): never recorded again (the key's checks would cost every call).
_UNREPLAYABLE: weakref.WeakSet = weakref.WeakSet()


def _autocast_dtype(device_type: str) -> torch.dtype | None:
    """The dtype torch.autocast runs recurrent layers in on this device, or None outside autocast
    (torch.nn's RNN ops are on autocast's lower-precision list, so ours follow them there)."""
    if torch.is_autocast_enabled(device_type):
        return torch.get_autocast_dtype(device_type)
    return None


@functools.lru_cache(maxsize=None)
def _triton_installed() -> bool:
    return importlib.util.find_spec("triton") is not None


_OPS: dict = {}


def _ops(name: str):
    """``rnnbench.ops.<name>`` (``recurrence``, ``preference``, ``replay``, ``replayed_layer``, and
    ``loop`` and ``naive``, the ones without Triton), imported on first use (the others import
    Triton) and kept: an
    import statement inside a function costs about a microsecond on every call."""
    module = _OPS.get(name)
    if module is None:
        module = _OPS[name] = importlib.import_module(f"{__package__}.ops.{name}")
    return module


def _interpreted() -> bool:
    """Whether the kernels are (or, once imported, will be) Triton-interpreted functions."""
    common = sys.modules.get("rnnbench.ops.common")
    if common is not None:
        return common.INTERPRET
    return os.environ.get("TRITON_INTERPRET") == "1"


class _KernelPath:
    """Shared by the three modules: choosing a path, and the stacked layers on the kernels."""

    cell: str  # set by each subclass's forward: lstm, gru, rnn_tanh, rnn_relu

    def __init__(self, *args, backend: str = "auto", recurrent_dropout: float = 0.0, layer_norm: bool = False,
                 **kwargs):
        super().__init__(*args, **kwargs)  # the torch.nn module's constructor, unchanged
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
        if isinstance(recurrent_dropout, bool) or not isinstance(recurrent_dropout, (int, float)) or not (
                0 <= recurrent_dropout < 1):
            raise ValueError(f"recurrent_dropout must be a number from 0 up to (not including) 1, got "
                             f"{recurrent_dropout!r}")
        if recurrent_dropout and self.proj_size:
            raise ValueError("recurrent_dropout with proj_size > 0 is not supported")
        if not isinstance(layer_norm, bool):
            raise ValueError(f"layer_norm must be True or False, got {layer_norm!r}")
        if layer_norm and self.proj_size:
            raise ValueError("layer_norm with proj_size > 0 is not supported")
        self.backend = backend
        self.recurrent_dropout = float(recurrent_dropout)
        self.layer_norm = layer_norm
        if layer_norm:
            self._add_layer_norm()

    def _add_layer_norm(self) -> None:
        """The layer-norm gains of every layer and direction, as parameters beside torch.nn's
        (``rnnbench.reference.LayerNormWeights``): ``ln_weight_ih_l{k}[_reverse]`` and
        ``ln_weight_hh_l{k}[_reverse]`` ``[G*H]``, the LSTM's ``ln_weight_c_l{k}[_reverse]`` and
        ``ln_bias_c_l{k}[_reverse]`` ``[H]``; ones and zeros, on the weights' device and dtype."""
        like = self.weight_hh_l0
        gates = like.shape[0]
        names = _ops("naive").LAYER_NORM_NAMES[:4 if self.mode == "LSTM" else 2]
        self._layer_norm_names = []  # (in layer and direction order: what a replay takes, _replay_weights)
        for k in range(self.num_layers):
            for suffix in ("", "_reverse")[:2 if self.bidirectional else 1]:
                for name in names:
                    size = gates if name.endswith(("_ih", "_hh")) else self.hidden_size
                    self.register_parameter(f"{name}_l{k}{suffix}", nn.Parameter(like.new_empty(size)))
                    self._layer_norm_names.append(f"{name}_l{k}{suffix}")
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch.nn's draw for its own weights; the layer-norm gains (where there are any) ones, their
        shifts zeros (torch.nn's draws every parameter it holds, which would include them)."""
        super().reset_parameters()
        if getattr(self, "layer_norm", False):  # (torch.nn's constructor calls this before there are gains)
            with torch.no_grad():
                for name in self._layer_norm_names:
                    self._parameters[name].fill_(0.0 if name.startswith("ln_bias") else 1.0)

    def _replay_weights(self) -> list:
        """The module's tensors a replay of its call takes (after the input and states), which its
        key's weights are: torch.nn's ``_flat_weights``, then the layer-norm gains where there are any."""
        if not self.layer_norm:
            return self._flat_weights
        params = self._parameters
        return [*self._flat_weights, *(params[name] for name in self._layer_norm_names)]

    def _layer_norm_weights(self, idx: int, amp: torch.dtype | None):
        """Layer and direction ``idx``'s (``k * directions + d``) ``LayerNormWeights``, or None
        without layer norm; in ``amp`` where given."""
        if not self.layer_norm:
            return None
        directions = 2 if self.bidirectional else 1
        suffix = f"_l{idx // directions}{'_reverse' if idx % directions else ''}"
        norm = _ops("naive").layer_norm_weights(self._parameters, suffix)  # (this module's own, no copy)
        return norm if amp is None else type(norm)(*(None if w is None else w.to(amp) for w in norm))

    def forward(self, input, hx=None, lengths=None):
        """torch.nn's forward; ``lengths`` (``[B]`` integers, 0 to T, any device; None: every
        sequence full length) makes the padded ``input`` a variable-length batch (module docstring).
        Read on the host; to capture the call in a CUDA graph, give them as a pinned int32 CPU
        tensor (``lengths.int().pin_memory()``): only a copy from pinned memory can be captured.

        Raises:
            ValueError: ``lengths`` with a PackedSequence or an unbatched input, or not ``[B]``
            integers from 0 to T (the torch backend takes 1 to T, as ``pack_padded_sequence``).
        """
        # torch.compile runs the module as it is, eagerly, between its graphs (as it runs torch.nn's
        # recurrent modules, which it never traces): traced, the kernels' launch is no graph it can
        # build, and the interpreter's fake-tensor run of it crashed. Only a call made while the
        # compiler is at work (tracing, or running a compiled model's frames, whose calls it would
        # trace) takes its wrapper: around every eager call it cost about 3 µs of host time on the
        # H100 (benchmarks/results/h100/bounds/bounds-13578a5, ``unwrapped``).
        if torch.compiler.is_compiling() or _eval_frame_callback() is not None:
            return _UNTRACED_FORWARD(self, input, hx, lengths)
        return self._forward(input, hx, lengths)

    def _forward(self, input, hx, lengths):
        """:meth:`forward`'s work (the compiler kept out of it by the caller). A training call with
        recurrent dropout draws new masks (:meth:`_kernel_forward`), so no replay stands in for it;
        where the kernels cannot take it (or under ``backend="torch"``) it runs on the loop of
        torch's cells (``ops/loop.py``: cuDNN has no recurrent dropout), ``launch`` None. So does
        every call with layer norm where no kernel takes it (cuDNN has none); ours take it
        (``recurrence.layer_norm_launch_or_refusal``) at any width: without gradients recorded and
        replayed as any other; with them never replayed."""
        drops = bool(self.recurrent_dropout) and self.training
        loop = drops or self.layer_norm  # (calls cuDNN cannot run: the loop where the kernels do not)
        trains = self.layer_norm and torch.is_grad_enabled() and _wants_gradients(self, input, hx)
        # (a key does not say whether a gradient is wanted, which sends a layer-normalized call to the loop)
        replays = None if drops or trains else _REPLAYS.get(self)
        if replays is not None and lengths is None:
            got = self._replayed(replays, input, hx)
            if got is not None:
                return got
        packed = isinstance(input, PackedSequence)
        if lengths is not None and (packed or input.dim() != 3):
            raise ValueError("lengths goes with a padded, batched input ([T, B, I] or [B, T, I] with batch_first)")
        if self.backend == "torch" and not loop:
            return self._torch_forward(input, hx, lengths)
        cell = self.cell  # (a property for the RNN: read once)
        x = input.data if packed else input
        amp = _autocast_dtype(x.device.type)
        batch = int(input.batch_sizes[0]) if packed else None
        launch, reason = (None, None) if self.backend == "torch" else self._launch(x, cell, amp, batch, drops, trains)
        if reason is not None:
            self._fall_back(reason)
            if not loop:
                return self._torch_forward(input, hx, lengths)
        if packed:
            return self._packed_forward(input, hx, cell, amp, launch)
        recordable = launch is not None and not (drops or trains) and lengths is None and amp is None
        if recordable and self._may_record(input):
            return self._recorded_forward(input, hx, cell, launch)
        return self._kernel_forward(input, hx, cell, amp, launch, lengths, self.batch_first)

    def _fall_back(self, reason: str) -> None:
        """Where the kernels cannot run a call: an error under ``backend="triton"``, else the
        warning, once per reason.

        Raises:
            RuntimeError: ``backend="triton"``."""
        if self.backend == "triton":
            raise RuntimeError(f"rnnbench.nn.{type(self).__name__}(backend='triton') cannot run this call: {reason}")
        key = (type(self).__name__, reason)
        if key not in _WARNED:
            _WARNED.add(key)
            warnings.warn(f"rnnbench.nn.{type(self).__name__}: {reason}; running PyTorch's own path instead",
                          RuntimeWarning, stacklevel=3)

    def _recurrent_mask(self, batch_size: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        """A fresh recurrent-dropout mask ``[B, H]``: each entry 0 with probability
        ``recurrent_dropout``, else ``1 / (1 - recurrent_dropout)`` (Keras' scaling), drawn from
        torch's generator of ``device``."""
        keep = 1.0 - self.recurrent_dropout
        return torch.empty(batch_size, self.hidden_size, dtype=dtype, device=device).bernoulli_(keep).div_(keep)

    # An eager forward replayed (ops/replay.py): the same launches as the normal path's, without
    # its Python (on the H100 the TF32 forward at batch 32, hidden 128 took 144.7 µs a call, its
    # launches and allocations alone 82.6: benchmarks/results/h100/call-floor). Only where that
    # path is launches of ours and allocations (a recording with any other work is refused: cuBLAS'
    # projection, a copy): one layer, one direction, no autocast, no lengths, contiguous aligned
    # tensors; on FMA units or tensor cores alike (past hidden 128, where the normal path's Python
    # cost glample's strict fp32 LSTM at hidden 500 about 160 µs a call on the H200 beside its
    # kernels' 218: results/h200/replay-all). With gradients wanted, the layer's training step
    # (ops/replayed_layer.py): its saving forward and its backward, each replayed.

    def _may_record(self, input) -> bool:
        """Whether this call may be recorded for replay (the rest is :meth:`_replay_key`'s)."""
        return (input.is_cuda and input.dim() == 3 and input.shape[0] > 0 and not self.batch_first
                and self not in _UNREPLAYABLE and _ops("replay").can_replay())

    def _replay_key(self, input, states: tuple, weights: list) -> tuple | None:
        """What the normal path's decisions for this call depend on, or None where a replay may
        not stand in for it: the input's and states' shapes, dtypes, devices (contiguous and
        16-byte aligned, as the weights), the weights' dtypes and devices, what the plans are keyed by
        (``recurrence._setting``: the dot precision and plan overrides of the moment), autocast,
        the backend and layout. ``weights``: :meth:`_replay_weights`. (Every replayed call pays for it: each tensor's facts are read once, in
        one loop. Read apart, they took 7.9 µs of the H200's host, ``results/h200/standing-0249ac9/
        eager-host``.)"""
        shape, dtype, device = input.shape, input.dtype, input.device
        pointers = input.data_ptr()
        facts = []
        for s in states:
            if not s.is_contiguous():
                return None
            pointers |= s.data_ptr()
            facts += (s.shape, s.dtype, s.device)
        # (the weights' devices too: the replay hands the launcher bare addresses, which no one
        # checks are the device's)
        for w in weights:
            if not w.is_contiguous():
                return None
            pointers |= w.data_ptr()
            facts += (w.dtype, w.device)
        if pointers & 15 or not input.is_contiguous():  # (the kernels were specialised on aligned pointers)
            return None
        # (the plans' own key: the cell, shape, dtype and device, and the dot precision and plan
        # overrides of the moment, which the TF32 switch and strict_fp32 decide)
        setting = _ops("recurrence")._setting(self.cell, shape[1], self.hidden_size, dtype, device)
        return (shape, setting, *facts, torch.is_autocast_enabled(device.type), self.backend, self.batch_first)

    def _recorded_forward(self, input, hx, cell: str, launch):
        """The normal path's forward, recorded, and kept as a replay where it can be one; with
        gradients wanted, the layer through ``ReplayedLayer`` (which records its two halves). A
        stacked module's call is the normal path around its layers, each layer recorded and
        replayed on its own (:data:`_REPLAYS`)."""
        replay = _ops("replay")
        states = _states(hx, cell)
        weights = self._replay_weights()
        key = None if states is None else self._replay_key(input, states, weights)
        train = torch.is_grad_enabled()
        stacked = self.num_layers > 1 or self.bidirectional
        if key is None or (train and not stacked and not _ops("recurrence").saves_for_backward(input, *states,
                                                                                                 *weights)):
            if not replay.aligned(weights):
                _UNREPLAYABLE.add(self)
            return self._kernel_forward(input, hx, cell, None, launch, None, False)
        key = (*key, "train") if train else key
        if stacked:
            directions = 2 if self.bidirectional else 1
            _, _, layers = _kept(self, key, weights, lambda: (launch, tuple(
                _ops("replayed_layer").LayerReplays() for _ in range(self.num_layers * directions))))
            return self._kernel_forward(input, hx, cell, None, launch, None, False, layers)
        layer = _kept_layer(self, key, weights, launch)
        if train:
            self._initial_state(input, hx, cell == "lstm", True, 1)  # (its checks: the normal path's errors)
            return self._replayed_layer(launch, layer, input, states)
        if not layer.may_record("forward"):
            return self._kernel_forward(input, hx, cell, None, launch, None, False)
        with replay.recording(input.device) as records:
            output, finals = self._kernel_forward(input, hx, cell, None, launch, None, False)
        layer.forward = layer.record("forward", records, (input, *states, *weights),
                                     (output, *(finals if cell == "lstm" else (finals,))))
        return output, finals

    def _replayed(self, replays: dict, input, hx):
        """This call's outputs by a replay recorded for its key (or the normal path unrecorded,
        where its forward recordings were refused; a stacked module's, the normal path around its
        layers' replays, without its checks and plan lookup, which the key stands for), or None
        where none may stand in."""
        if type(input) is not torch.Tensor:
            return None
        cell = self.cell
        states = _states(hx, cell)
        if states is None:
            return None
        flat = self._replay_weights()
        key = self._replay_key(input, states, flat)
        if key is None:
            return None
        train = torch.is_grad_enabled()
        found = replays.get((*key, "train") if train else key)
        if found is None:
            return None
        weights, launch, layer = found
        if not _same_tensors(flat, weights) or not _ops("replay").can_replay():
            return None
        if type(layer) is tuple:  # (a stacked module's: a LayerReplays a layer and direction)
            return self._kernel_forward(input, hx, cell, None, launch, None, False, layer)
        if train:
            if not _ops("recurrence").saves_for_backward(input, *states, *flat):
                return None
            return self._replayed_layer(launch, layer, input, states)
        forward = layer.forward
        if forward is None:
            if layer.may_record("forward"):
                return None  # (recorded again by the normal path)
            # (the key, checked above, stands for the normal path's decisions: its launch plans too)
            return self._kernel_forward(input, hx, cell, None, launch, None, False)
        got = forward((input, *states, *flat))
        if got is None:
            return None
        output, *finals = got
        return output, (tuple(finals) if cell == "lstm" else finals[0])

    def _replayed_layer(self, launch, layer, input, states: tuple):
        """The one layer's training call through ``ReplayedLayer`` (``launch``: its plans;
        ``layer``: its ``LayerReplays``, kept for the key): torch.nn's return values."""
        cell = self.cell
        w = self._flat_weights
        h0 = states[0] if states else None
        c0 = states[1] if len(states) == 2 else None
        output, h_n, c_n = _ops("replayed_layer").ReplayedLayer.apply(
            input, h0, c0, w[0], w[1], w[2] if len(w) == 4 else None, w[3] if len(w) == 4 else None, cell, launch,
            layer)
        return output, ((h_n, c_n) if cell == "lstm" else h_n)

    def _torch_forward(self, input, hx, lengths):
        """torch.nn's own forward; given ``lengths``, on the batch packed and the output padded back."""
        if lengths is None:
            return super().forward(input, hx)
        packed = pack_padded_sequence(input, lengths.cpu(), self.batch_first, enforce_sorted=False)
        output, h_n = super().forward(packed, hx)
        steps = input.shape[1 if self.batch_first else 0]
        return pad_packed_sequence(output, self.batch_first, total_length=steps)[0], h_n

    def extra_repr(self) -> str:
        drop = f", recurrent_dropout={self.recurrent_dropout}" if self.recurrent_dropout else ""
        norm = ", layer_norm=True" if self.layer_norm else ""
        return f"{super().extra_repr()}{drop}{norm}, backend={self.backend!r}"

    def _launch(self, input: torch.Tensor, cell: str, amp: torch.dtype | None, batch: int | None = None,
                dropout: bool = False, trains: bool = False):
        """``(launch, None)`` if the kernels can run this call (``launch`` the plans of every layer,
        ``rnnbench.ops.recurrence.layer_launch``) and, under ``backend="auto"`` on CUDA, cuDNN was
        not measured faster there (``rnnbench.ops.preference``); else ``(None, why not)`` in one
        line. ``input`` is the padded input, or a packed one's data with its ``batch`` size given.
        ``dropout``: a call with recurrent dropout (``recurrence.dropout_launch_or_refusal``; no
        cuDNN to prefer); ``trains``: a layer-normalized call that wants gradients (its backward's
        plan too, ``recurrence.layer_norm_launch_or_refusal``)."""
        if self.layer_norm and dropout:
            return None, "layer_norm with recurrent dropout has no kernel"
        if not _triton_installed():
            return None, "Triton is not installed"
        if self.proj_size:
            return None, "proj_size > 0 has no kernel"
        dim = input.dim()
        if batch is None and dim != 3 and dim != 2:
            return None, f"a {dim}-D input (expected [T, B, I] or [T, I])"
        device = input.device
        weight_dtype = self._flat_weights[1].dtype  # weight_hh_l0 (no nn.Module.__getattr__ per call)
        if input.dtype != weight_dtype and amp is None:
            return None, f"input dtype {input.dtype} differs from the weights' {weight_dtype}"
        if device.type == "cpu" and not _interpreted():
            return None, "CPU tensors (the Triton kernels run on CUDA, or on the CPU under TRITON_INTERPRET=1)"
        if batch is None:
            batch = 1 if dim == 2 else input.shape[0 if self.batch_first else 1]
        # Imports Triton: only once a kernel is a candidate.
        dtype = amp or input.dtype
        recurrence = _ops("recurrence")
        if dropout:
            return recurrence.dropout_launch_or_refusal(cell, batch, self.hidden_size, dtype, device)
        if self.layer_norm:
            return recurrence.layer_norm_launch_or_refusal(cell, batch, self.hidden_size, dtype, device, trains)
        launch, reason = recurrence.launch_or_refusal(cell, batch, self.hidden_size, dtype, device)
        if reason is None and self.backend == "auto" and device.type == "cuda":
            # Where cuDNN was measured faster (ops/preference.py); "triton" runs ours there anyway.
            preference = _ops("preference")
            grad = torch.is_grad_enabled() and (input.requires_grad or self._flat_weights[1].requires_grad)
            name = preference.dtype_name(dtype, launch.precision)
            reason = preference.cudnn_faster(cell, batch, self.hidden_size, name, grad)
            if reason is not None:
                launch = None
        return launch, reason

    def _packed_forward(self, input: PackedSequence, hx, cell: str, amp: torch.dtype | None, launch):
        """A ``PackedSequence`` as torch.nn takes it: the stack runs on the padded batch in the
        packing's order (longest first) with each sequence's length, ``hx`` is permuted into that
        order and ``h_n`` back, and the output is packed again with the input's indices. Unpacked
        and packed by one scatter and one gather (:func:`_packed_rows`): torch's
        ``pad_packed_sequence`` and ``pack_padded_sequence`` copy step by step, forward and
        backward, and at 200 steps those copies took four times our kernels' training step on the
        H100 (``benchmarks/results/h100/varlen-triton/``)."""
        data, batch_sizes = input.data, input.batch_sizes
        rows, lengths = _packed_rows(batch_sizes, data.device)
        steps, batch = len(batch_sizes), len(lengths)
        x = data.new_zeros(steps * batch, data.shape[1]).index_copy(0, rows, data).view(steps, batch, -1)
        if hx is not None and input.sorted_indices is not None:
            hx = self.permute_hidden(hx, input.sorted_indices)
        output, h_n = self._kernel_forward(x, hx, cell, amp, launch, lengths, batch_first=False)
        data = output.reshape(steps * batch, -1).index_select(0, rows)
        output = PackedSequence(data, batch_sizes, input.sorted_indices, input.unsorted_indices)
        return output, self.permute_hidden(h_n, input.unsorted_indices)

    def _kernel_forward(self, input, hx, cell: str, amp: torch.dtype | None, launch, lengths=None,
                        batch_first: bool = False, layers: tuple | None = None):
        """The stack on the kernels, each layer and direction with ``launch`` (one plan for all:
        same batch, width, dtype, device); shapes and returns as torch.nn's forward, ``input``
        ``[B, T, I]`` where ``batch_first``. ``lengths`` (``[B]``) makes a variable-length batch.
        ``layers``: a ``LayerReplays`` per layer and direction to run each through
        (``ops/replayed_layer.run_layer``; no lengths, no autocast), kept for this call's key.
        In training with recurrent dropout each layer and direction draws its mask
        (:meth:`_recurrent_mask`); ``launch`` None runs each on ``ops/loop.py``'s loop (with the
        layer-norm gains, :meth:`_layer_norm_weights`)."""
        loop_layer = _ops("loop").loop_layer if launch is None else None
        run_layer = None if launch is None else _ops("recurrence").run_layer
        replayed = None if layers is None else _ops("replayed_layer").run_layer
        drops = bool(self.recurrent_dropout) and self.training
        lstm = cell == "lstm"
        batched = input.dim() == 3
        x = input if batched else input.unsqueeze(1)
        if amp is not None:
            x = x.to(amp)
        if batched and batch_first:
            x = x.transpose(0, 1)
        directions = 2 if self.bidirectional else 1
        h0, c0 = self._initial_state(x, hx, lstm, batched, directions)  # None: zeros in the kernel
        if amp is not None:
            h0, c0 = (None if s is None else s.to(amp) for s in (h0, c0))
        h0, c0 = _per_layer(h0), _per_layer(c0)
        reverse = None  # the reverse direction's time reversal: whole sequences, unless lengths differ
        if lengths is not None:
            device_lengths = _ops("loop").kernel_lengths(lengths, x.shape[0], x.shape[1], x.device)
            if device_lengths is not None and directions == 2:
                reverse = _reversal(lengths, x.shape[0], x.device)
            lengths = device_lengths
        # Weights as torch.nn's own forward takes them, from _flat_weights (per layer and
        # direction: w_ih, w_hh, then b_ih, b_hh when there is a bias).
        weights = self._flat_weights
        per_layer = 4 if self.bias else 2
        finals_h, finals_c, layer_input = [], [], x
        for k in range(self.num_layers):
            outputs = []
            for d in range(directions):
                idx = k * directions + d
                w = weights[idx * per_layer:(idx + 1) * per_layer]
                if per_layer == 2:
                    w = [*w, None, None]
                if amp is not None:
                    w = [None if t is None else t.to(amp) for t in w]
                # The reverse direction is the forward kernel on the time-reversed sequences.
                inp = _reversed(layer_input, reverse) if d else layer_input
                h0_idx, c0_idx = None if h0 is None else h0[idx], None if c0 is None else c0[idx]
                mask = self._recurrent_mask(x.shape[1], x.dtype, x.device) if drops else None
                norm = self._layer_norm_weights(idx, amp)
                if loop_layer is not None:
                    out, h_n, c_n = loop_layer(cell, inp, h0_idx, c0_idx, *w, lengths, mask, norm)
                elif replayed is None:
                    out, h_n, c_n = run_layer(cell, inp, h0_idx, c0_idx, *w, launch, lengths, mask, norm)
                else:
                    out, h_n, c_n = replayed(layers[idx], cell, inp, h0_idx, c0_idx, *w, launch, norm)
                outputs.append(_reversed(out, reverse) if d else out)
                finals_h.append(h_n)
                finals_c.append(c_n)
            layer_input = outputs[0] if directions == 1 else torch.cat(outputs, dim=2)
            if self.dropout and self.training and k < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, training=True)
        output = layer_input
        if batched and batch_first:
            output = output.transpose(0, 1)
        # Each layer's final states come as [1, B, H]: one layer's are the module's as they are.
        if len(finals_h) == 1:
            h_n, c_n = finals_h[0], finals_c[0]
        else:
            h_n = torch.cat(finals_h)
            c_n = torch.cat(finals_c) if lstm else None
        if not batched:
            output, h_n = output.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if lstm else None
        return output, ((h_n, c_n) if lstm else h_n)

    def _initial_state(self, x, hx, lstm: bool, batched: bool, directions: int):
        """``(h0, c0)`` as ``[L*D, B, H]``; ``(None, None)`` when ``hx`` is None (the kernels
        start from zeros without a tensor of them); ``c0`` None unless LSTM.

        Raises:
            RuntimeError: a state of the wrong shape (torch.nn raises RuntimeError too).
        """
        if hx is None:
            return None, None
        shape = (self.num_layers * directions, x.shape[1], self.hidden_size)
        states = hx if lstm else (hx,)
        if not batched:
            states = tuple(s.unsqueeze(1) for s in states)
        for s in states:
            if s.shape != shape:
                raise RuntimeError(f"Expected hidden size {shape}, got {tuple(s.shape)}")
        return states[0], (states[1] if lstm else None)


# The forward's work as torch.compile runs it: eagerly, outside its graph (_KernelPath.forward).
_UNTRACED_FORWARD = torch.compiler.disable(_KernelPath._forward)
try:  # (what torch.compile's frames run under: None outside them)
    from torch._C._dynamo.eval_frame import get_eval_frame_callback as _eval_frame_callback
except ImportError:  # (a torch without it: every call through the compiler's wrapper, as it was)
    def _eval_frame_callback():
        return True


def _wants_gradients(module, input, hx) -> bool:
    """Whether a call wants gradients of anything it takes (gradients enabled is the caller's check):
    the input (a PackedSequence's data), a state, a parameter."""
    x = input.data if isinstance(input, PackedSequence) else input
    states = () if hx is None else hx if isinstance(hx, tuple) else (hx,)
    return x.requires_grad or any(s.requires_grad for s in states) or any(p.requires_grad for p in module.parameters())


def _same_tensors(a, b) -> bool:
    """Whether two sequences hold the very same tensor objects (a replay's weights: the module's
    still, not replaced or re-flattened)."""
    return len(a) == len(b) and all(map(operator.is_, a, b))


def _kept_layer(module, key: tuple, weights: list, launch):
    """The ``LayerReplays`` kept for ``module``'s ``key`` (:data:`_REPLAYS`) where it was
    recorded with these weights, else a new one kept in its place."""
    return _kept(module, key, weights, lambda: (launch, _ops("replayed_layer").LayerReplays()))[2]


def _kept(module, key: tuple, weights: list, make) -> tuple:
    """``_REPLAYS[module][key]``, ``(weights, launch, replays)``, where it was recorded with these
    weights, else ``(weights, *make())`` kept in its place (starting again past
    :data:`_MAX_REPLAYS` keys)."""
    kept = _REPLAYS.setdefault(module, {})
    found = kept.get(key)
    if found is not None and _same_tensors(found[0], weights):
        return found
    if key not in kept and len(kept) >= _MAX_REPLAYS:
        kept.clear()
    kept[key] = found = (tuple(weights), *make())
    return found


def _states(hx, cell: str) -> tuple | None:
    """``hx`` as a tuple of state tensors (none, ``(h0,)``, or the LSTM's ``(h0, c0)``), or None
    where it is neither (a replay then does not stand in: the normal path checks it)."""
    if hx is None:
        return ()
    if cell == "lstm":
        return hx if type(hx) is tuple and len(hx) == 2 and all(type(s) is torch.Tensor for s in hx) else None
    return (hx,) if type(hx) is torch.Tensor else None


def _packed_rows(batch_sizes: torch.Tensor, device) -> tuple[torch.Tensor, torch.Tensor]:
    """For a packing's ``batch_sizes`` (``[T]``, on the CPU): where each packed row lies in the
    padded batch flattened to ``[T * B]`` (row ``k`` of the data is step t of sequence j, at ``t *
    B + j``), on ``device``; and the sequences' lengths (``[B]``, longest first, CPU)."""
    running = torch.arange(int(batch_sizes[0])) < batch_sizes.unsqueeze(1)  # [T, B]: step t of sequence j
    # non_blocking: no wait for the stream's queued work (the host copy is staged at once)
    return running.flatten().nonzero().squeeze(1).to(device, non_blocking=True), running.sum(0)


def _reversal(lengths: torch.Tensor, seq_len: int, device) -> torch.Tensor:
    """``[T, B]`` step indices on ``device`` reversing each sequence within its own length
    (step t of sequence b reads step ``lengths[b] - 1 - t``; padding stays where it is), as the
    reverse direction of a packed batch reads it."""
    steps = torch.arange(seq_len).unsqueeze(1)
    lengths = lengths.cpu()
    return torch.where(steps < lengths, lengths - 1 - steps, steps).to(device, non_blocking=True)


def _reversed(x: torch.Tensor, reversal: torch.Tensor | None) -> torch.Tensor:
    """``x [T, B, F]`` reversed in time: whole (``reversal`` None), or each sequence within its
    own length (:func:`_reversal`). Either is its own inverse."""
    if reversal is None:
        return x.flip(0)
    return x.gather(0, reversal.unsqueeze(2).expand(-1, -1, x.shape[2]))


def _per_layer(state: torch.Tensor | None) -> tuple[torch.Tensor, ...] | None:
    """``state [L*D, B, H]`` as one ``[1, B, H]`` tensor per layer and direction (None stays
    None): one layer's as it is (the kernels read ``[1, B, H]`` as ``[B, H]``), several by
    ``split`` (one view each, and one concatenation in the backward), not by indexing, whose
    backward fills a tensor of zeros and copies into it for every layer (two launches each on the
    host's clock)."""
    if state is None:
        return None
    return (state,) if state.shape[0] == 1 else state.split(1)


class LSTM(_KernelPath, nn.LSTM):
    """torch.nn.LSTM on rnnbench's kernels; ``backend`` as in the module docstring.

    Shapes: input ``[T, B, I]`` (``[B, T, I]`` with ``batch_first``, ``[T, I]`` unbatched, or a
    ``PackedSequence`` returning one); ``hx``
    a pair ``(h0, c0)`` of ``[L*D, B, H]``; returns ``(output [T, B, D*H], (h_n, c_n))``.

    Raises:
        ValueError: an unknown backend, ``recurrent_dropout`` not in [0, 1), ``layer_norm`` not a
        bool, or either of them with ``proj_size``.
        RuntimeError: ``backend="triton"`` on a call the kernels cannot run.
    """

    cell = "lstm"


class GRU(_KernelPath, nn.GRU):
    """torch.nn.GRU on rnnbench's kernels (reset gate after the recurrent matmul, as torch.nn);
    ``backend`` as in the module docstring. Shapes as torch.nn.GRU; errors as :class:`LSTM`."""

    cell = "gru"


class RNN(_KernelPath, nn.RNN):
    """torch.nn.RNN (``nonlinearity`` ``tanh`` or ``relu``) on rnnbench's kernels; ``backend``
    as in the module docstring. Shapes as torch.nn.RNN; errors as :class:`LSTM`."""

    @property
    def cell(self) -> str:
        return f"rnn_{self.nonlinearity}"
