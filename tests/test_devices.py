"""The same weights on another device give the CPU's numbers, within a stated tolerance.

For each accelerator, Apple's MPS and CUDA, skipped with the reason where torch sees none: the course's
pre-trained BERT and GPT (and a small random Llama), loaded on the CPU and on the device, agree on a padded batch
(hidden states and logits), and one training step (MLM + NSP for BERT, next-token loss for GPT, plain SGD so that the
step is the gradient itself) gives the same loss, gradients and updated weights. Dropout is off (eval
mode): what is compared is arithmetic, not random draws.

The tolerances are float32 rounding of the same computation done in another order, with room for
MPS's kernels (see README "Apple silicon (MPS)"): MPS has no float64, some of its kernels (GELU,
softmax, layer norm) are not CPU-exact, and reductions run in a different order. ``cpu`` runs the same
comparison between two CPU copies, which must agree to float32 rounding, so that the harness itself is
checked on every machine. Run ``pytest tests/test_devices.py -rs`` on a Mac with Apple silicon (or a
CUDA machine) to exercise the rest.
"""

from __future__ import annotations

import copy

import pytest
import torch

from word2bert import bert, gpt, llama

SENTENCES = [
    "the bat flew out of the dark cave at night .".split(),
    "she hit the ball with a wooden bat .".split(),
]

# (atol, rtol) for forward outputs, the loss, gradients, and weights after one SGD step.
TOLERANCES = {
    "cpu": {"forward": (1e-6, 1e-6), "loss": (1e-6, 1e-6), "grad": (1e-6, 1e-5), "step": (1e-6, 1e-6)},
    # As tests/test_gpu.py (TF32 matmuls stay off, PyTorch's default). Measured on an H100 (torch 2.11, CUDA 13)
    # with the committed checkpoints: logits differ by 1.3e-5 at most, the GPT loss by 2e-6, its gradients by 4e-6.
    "cuda": {"forward": (1e-4, 1e-4), "loss": (1e-4, 1e-4), "grad": (1e-4, 1e-3), "step": (1e-5, 1e-4)},
    # float32 throughout, kernels that are not CPU-exact: ten times CUDA's.
    "mps": {"forward": (1e-3, 1e-3), "loss": (1e-3, 1e-3), "grad": (1e-3, 1e-2), "step": (1e-4, 1e-3)},
}
LR = 0.1


def available(device: str) -> tuple[bool, str]:
    if device == "cpu":
        return True, ""
    if device == "cuda":
        return torch.cuda.is_available(), "needs a CUDA GPU; torch sees none here"
    mps = getattr(torch.backends, "mps", None)
    if mps is None or not mps.is_built():
        return False, f"this torch {torch.__version__} is not built with MPS (Apple silicon, macOS)"
    return mps.is_available(), "torch.backends.mps.is_available() is false: no Apple-silicon GPU here"


@pytest.fixture(params=list(TOLERANCES))
def device(request) -> str:
    ok, why = available(request.param)
    if not ok:
        pytest.skip(why)
    return request.param


def close(got: torch.Tensor, want: torch.Tensor, tol: tuple[float, float], what: str) -> None:
    atol, rtol = tol
    torch.testing.assert_close(
        got.detach().cpu(), want.detach().cpu(), atol=atol, rtol=rtol, msg=lambda m: f"{what}: {m}"
    )


def on(model: torch.nn.Module, device: str) -> torch.nn.Module:
    """A copy of `model` on `device`, in eval mode (no dropout)."""
    return copy.deepcopy(model).to(device).eval()


@pytest.fixture(scope="module")
def bert_cpu():
    return bert.pretrained(device="cpu").eval()


@pytest.fixture(scope="module")
def gpt_cpu():
    return gpt.pretrained(device="cpu").eval()


def bert_batch(model) -> dict[str, torch.Tensor]:
    tok = model.tokenizer
    batch = tok.batch([tok.encode_words(s) for s in SENTENCES])  # right-padded, with attention_mask
    assert not batch["attention_mask"].all(), "the batch should hold padding"
    labels = torch.full_like(batch["input_ids"], -100)
    labels[:, 1::3] = batch["input_ids"][:, 1::3]  # every third token a prediction target
    labels[batch["attention_mask"] == 0] = -100
    return {**batch, "labels": labels, "next_sentence_label": torch.tensor([0, 1])}


def gpt_batch(model) -> dict[str, torch.Tensor]:
    ids = [model.tokenizer.encode_words(s)[0] for s in SENTENCES]
    T = max(map(len, ids))
    return {  # left-padded, as GPT batches are
        "input_ids": torch.tensor([[0] * (T - len(i)) + i for i in ids]),
        "attention_mask": torch.tensor([[0] * (T - len(i)) + [1] * len(i) for i in ids]),
    }


def to(batch: dict[str, torch.Tensor], device: str) -> dict[str, torch.Tensor]:
    return {k: v.to(device) for k, v in batch.items()}


def test_bert_forward_agrees_with_the_cpu(bert_cpu, device):
    tol = TOLERANCES[device]["forward"]
    model, batch = on(bert_cpu, device), bert_batch(bert_cpu)
    with torch.no_grad():
        want = bert_cpu(**batch, output_hidden_states=True)
        got = model(**to(batch, device), output_hidden_states=True)
    assert got.last_hidden_state.device.type == device
    real = batch["attention_mask"].bool()  # padding positions' vectors are never used
    for layer, (g, w) in enumerate(zip(got.hidden_states, want.hidden_states)):
        close(g[real.to(device)], w[real], tol, f"BERT hidden states, layer {layer}")
    close(got.pooler_output, want.pooler_output, tol, "BERT pooled [CLS]")
    close(got.prediction_logits[real.to(device)], want.prediction_logits[real], tol, "MLM logits")
    close(got.seq_relationship_logits, want.seq_relationship_logits, tol, "NSP logits")
    close(got.loss, want.loss, TOLERANCES[device]["loss"], "pre-training loss")


def test_gpt_forward_agrees_with_the_cpu(gpt_cpu, device):
    tol = TOLERANCES[device]["forward"]
    model, batch = on(gpt_cpu, device), gpt_batch(gpt_cpu)
    with torch.no_grad():
        want = gpt_cpu.hidden_states(**batch)
        got = model.hidden_states(**to(batch, device))
        want_logits, got_logits = gpt_cpu(**batch), model(**to(batch, device))
    real = batch["attention_mask"].bool()
    for layer, (g, w) in enumerate(zip(got, want)):
        close(g[real.to(device)], w[real], tol, f"GPT hidden states, layer {layer}")
    close(got_logits[real.to(device)], want_logits[real], tol, "GPT next-token logits")


def test_llama_forward_agrees_with_the_cpu(device):
    """A small random Llama (SmolLM2's pieces: RMSNorm, rotary embeddings, grouped-query attention, SwiGLU) on a
    left-padded batch: every layer and the logits."""
    torch.manual_seed(0)
    config = llama.LlamaConfig(vocab_size=300, block_size=64, n_layer=2, n_head=4, n_kv_head=2, n_embd=64, n_hidden=96)
    cpu = llama.Llama(config).eval()
    ids = torch.randint(0, 300, (2, 12), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :5] = 0
    model, tol = on(cpu, device), TOLERANCES[device]["forward"]
    with torch.no_grad():
        want, got = cpu.hidden_states(ids, mask), model.hidden_states(ids.to(device), mask.to(device))
        want_logits, got_logits = cpu(ids, mask), model(ids.to(device), mask.to(device))
    real = mask.bool()
    for layer, (g, w) in enumerate(zip(got, want)):
        close(g[real.to(device)], w[real], tol, f"Llama hidden states, layer {layer}")
    close(got_logits[real.to(device)], want_logits[real], tol, "Llama next-token logits")


def train_step(model, loss_of, batch) -> tuple[torch.Tensor, dict, dict]:
    """One SGD step: (loss, gradients, weights after the step), gradients and weights by name."""
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    optimizer.zero_grad()
    loss = loss_of(model, batch)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    optimizer.step()
    return loss.detach(), grads, {n: p.detach().clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("kind", ["bert", "gpt"])
def test_one_training_step_agrees_with_the_cpu(bert_cpu, gpt_cpu, device, kind):
    cpu_model = bert_cpu if kind == "bert" else gpt_cpu
    batch = bert_batch(cpu_model) if kind == "bert" else gpt_batch(cpu_model)
    loss_of = (lambda m, b: m(**b).loss) if kind == "bert" else (lambda m, b: m.loss(**b))
    want = train_step(on(cpu_model, "cpu"), loss_of, batch)
    got = train_step(on(cpu_model, device), loss_of, to(batch, device))
    tol = TOLERANCES[device]
    close(got[0], want[0], tol["loss"], f"{kind} loss")
    assert got[1].keys() == want[1].keys() and len(want[1]) > 10
    for name in want[1]:
        close(got[1][name], want[1][name], tol["grad"], f"{kind} gradient of {name}")
        close(got[2][name], want[2][name], tol["step"], f"{kind} {name} after one SGD step")
    moved = max((want[2][n] - p.detach()).abs().max().item() for n, p in cpu_model.named_parameters() if n in want[2])
    assert moved > 1e-4, "the step should change the weights (else nothing was compared)"
