"""The BERT chapter's code on a CUDA GPU: the same numbers as on the CPU, bf16 autocast pre-training, fine-tuning.

Skipped (with the reason shown) where no GPU is present; CI is CPU-only. Run ``pytest tests/test_gpu.py -rs`` on a
GPU machine.
"""

import math

import pytest
import torch

from word2bert import bert
from word2bert import finetune as ft
from word2bert.data import ToyWorld
from word2bert.pretraining import PretrainConfig, pretrain
from word2bert.pretraining_data import create_pretraining_instances, tokenize_documents
from word2bert.training import TrainConfig

DEVICE = "cuda"
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU; torch sees none here")


def test_pretrained_bert_gives_the_cpu_outputs_on_the_gpu():
    cpu, gpu = bert.pretrained(device="cpu"), bert.pretrained(device=DEVICE)
    tok = cpu.tokenizer
    enc = tok.encode_words("the bat flew out of the dark cave .".split())
    ids, types = torch.tensor([enc.input_ids]), torch.tensor([enc.token_type_ids])
    with torch.no_grad():
        want = cpu(ids, types)
        got = gpu(ids.to(DEVICE), types.to(DEVICE))
    # TF32 matmuls (if a user enabled them) would need a looser tolerance; PyTorch's default keeps them off.
    torch.testing.assert_close(got.last_hidden_state.cpu(), want.last_hidden_state, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got.prediction_logits.cpu(), want.prediction_logits, atol=1e-3, rtol=1e-4)


def test_pretraining_runs_under_bf16_autocast_and_keeps_fp32_weights():
    model = bert.pretrained(device=DEVICE)
    tok = model.tokenizer
    documents = tokenize_documents(tok, ToyWorld(0).corpus(20_000))
    instances = create_pretraining_instances(documents, 64, seed=0)
    config = PretrainConfig(
        train=TrainConfig(steps=30, lr=1e-4, warmup_steps=3, schedule="linear"), batch_size=16, eval_every=0
    )
    result = pretrain(model, instances, tok, config, instances[:64], device=DEVICE)
    assert len(result.losses) == 30 and all(math.isfinite(x) for x in result.losses), result.losses
    assert result.evals and result.evals[-1]["mlm_accuracy"] > 0.1, result.evals
    assert all(p.dtype == torch.float32 and p.device.type == "cuda" for p in model.parameters())


def test_finetuning_runs_on_the_gpu():
    encoder = bert.pretrained(device="cpu").bert
    config = ft.FinetuneConfig(n_train=64, n_test=32, steps=10)
    for task in ft.TASKS:
        result = ft.finetune(task, encoder, config, device=DEVICE, keep_model=True)
        assert next(result.model.parameters()).device.type == "cuda"
        assert all(math.isfinite(x) for x in result.losses), (task, result.losses)
        # ten steps from the pre-trained encoder: the second half's mean loss is below the first step's (on the
        # CPU: sentiment 0.68 against 0.76, NLI 0.98 against 1.24, POS and QA far below); a run whose steps
        # never reach the GPU's parameters, or diverge, stays at or above its start
        late = result.losses[len(result.losses) // 2 :]
        assert sum(late) / len(late) < result.losses[0], (task, result.losses)


def test_a_model_on_the_gpu_saves_a_checkpoint(tmp_path):
    """On a GPU, cuDNN keeps an LSTM's weights as views of one flat buffer, which safetensors refuses to save;
    `save_checkpoint` writes from a CPU copy (ELMo trained on an H100 failed to save before it did)."""
    from word2bert import elmo

    model = elmo.pretrained(device=DEVICE)
    path = elmo.save(model, tmp_path / "elmo.safetensors", dtype=torch.float16)
    loaded = elmo.load(path, device="cpu")
    assert loaded.config == model.config
    for name, weight in model.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[name], weight.cpu().half().float(), msg=name)
