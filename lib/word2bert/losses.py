"""The output layer's cross-entropy, computed as one step: ``F.cross_entropy(x @ weight.T + bias, targets)``.

A language model's last layer scores every word of the vocabulary at every position: [N, V] logits, 2,048 x 8,000
for a batch of the course's GPT. Written plainly, autograd keeps the log-softmax of those logits, then builds their
gradient from a zeroed [N, V] tensor and the log-softmax again: three passes over the largest tensor of the step,
each with its own exponentials. The gradient is known in the forward pass already (softmax(logits) - one_hot(target),
scaled by 1/N), so here it is made there, in the log-probabilities' own memory, and the backward pass is the two
matrix products alone. Same loss, same gradients (to float rounding); a GPT training step on a CPU is about 1.3x faster
(``benchmarks/README.md``).
"""

from __future__ import annotations

import torch


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, targets, ignore_index):
        logits = x @ weight.T
        if logits.dtype in (torch.float16, torch.bfloat16):  # under autocast: the softmax in float32
            logits = logits.float()
        if bias is not None:
            logits += bias
        kept = targets != ignore_index
        scale = kept / kept.sum()  # the mean over the targets that count
        target = targets.clamp(min=0)[:, None]
        log_probs = torch.log_softmax(logits, dim=-1)
        del logits
        loss = -(log_probs.gather(1, target).squeeze(1) * scale).sum()  # NaN if none counts
        grad = log_probs.exp_()  # softmax(logits), in place of the log-probabilities
        grad.scatter_add_(1, target, torch.full_like(target, -1, dtype=grad.dtype))  # minus the one-hot target
        ctx.save_for_backward(x, weight, bias, grad, scale)
        return loss

    @staticmethod
    def backward(ctx, g):
        x, weight, bias, grad, scale = ctx.saved_tensors
        s = (scale * g)[:, None].to(grad.dtype)  # each row's share of the mean, on the [N, D] side of the products
        grad_x = (grad @ weight.to(grad.dtype)) * s
        grad_weight = grad.T @ (x.to(grad.dtype) * s)
        grad_bias = None if bias is None else (grad.T @ s).squeeze(1).to(bias.dtype)
        return grad_x.to(x.dtype), grad_weight.to(weight.dtype), grad_bias, None, None


def linear_cross_entropy(
    x: torch.Tensor,
    weight: torch.Tensor,
    targets: torch.Tensor,
    bias: torch.Tensor | None = None,
    ignore_index: int = -100,
) -> torch.Tensor:
    """``F.cross_entropy(x @ weight.T + bias, targets, ignore_index=ignore_index)``, the mean over the targets that
    are not ``ignore_index``. x: [N, D]; weight: [V, D] (an ``nn.Linear``'s, or a tied embedding's); targets: [N]."""
    return _LinearCrossEntropy.apply(x, weight, bias, targets, ignore_index)
