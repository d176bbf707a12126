"""The shipped Hugging Face configs added after the first twelve (snsim/presets/hf: Pythia 160M
and 1B, OPT-125M, Qwen2.5-0.5B, TinyLlama 1.1B, BERT-large, DistilGPT2, GPT-Neo 125M): each
loads through the loader ``snsim predict --model hf:NAME`` uses (:func:`resolve_model` and
its ``build``), builds the head its ``architectures`` names, and holds exactly the published
model's parameters. Built on the meta device: no weights are allocated."""
import os
import re

import pytest

# name: (architecture built, head, vocab, longest --seq (0: rotary, no learned limit),
#        parameters). Every count is worked by hand below from the config's fields and equals
#        the figure published for the model.
PRESETS = {
    # GPT-NeoX, d 768, 12 layers, ff 3,072, vocab 50,304, untied: embed_in + embed_out
    # 2 x 50,304 x 768 = 77,266,944; a layer 2 LayerNorms 4 x 768 + qkv 768 x 2,304 + 2,304
    # + dense 768^2 + 768 + MLP 2 x 768 x 3,072 + 3,072 + 768 = 7,087,872, x 12 = 85,054,464;
    # final LayerNorm 1,536: 162,322,944 (the model card's 85,056,000 non-embedding + 2 x
    # 38,633,472)
    "pythia-160m": ("GPTNeoXForCausalLM", "causal", 50304, 0, 162_322_944),
    # d 2,048, 16 layers, 8 heads, ff 8,192: embeddings 2 x 50,304 x 2,048 = 206,045,184; a
    # layer 8,192 + 2,048 x 6,144 + 6,144 + 2,048^2 + 2,048 + 2 x 2,048 x 8,192 + 8,192 +
    # 2,048 = 50,358,272, x 16 = 805,732,352; final LayerNorm 4,096: 1,011,781,632
    "pythia-1b": ("GPTNeoXForCausalLM", "causal", 50304, 0, 1_011_781_632),
    # OPT, d 768, 12 layers, ReLU FFN 3,072, tied head: tokens 50,272 x 768 = 38,608,896;
    # learned positions (2,048 + OPT's offset 2) x 768 = 1,574,400; a layer 4 x (768^2 + 768)
    # + 2 LayerNorms 3,072 + 768 x 3,072 + 3,072 + 3,072 x 768 + 768 = 7,087,872, x 12 =
    # 85,054,464; final LayerNorm (do_layer_norm_before) 1,536: 125,239,296
    "opt-125m": ("OPTForCausalLM", "causal", 50272, 2048, 125_239_296),
    # Qwen2, d 896, 24 layers, 14 query heads of 64, 2 key-value heads, SwiGLU 4,864, biased
    # q/k/v, tied: embeddings 151,936 x 896 = 136,134,656; a layer q 896^2 + 896 + k, v
    # 2 x (896 x 128 + 128) + o 896^2 + MLP 3 x 896 x 4,864 + 2 RMSNorms 1,792 = 14,912,384,
    # x 24 = 357,897,216; final norm 896: 494,032,768 (Qwen2.5-0.5B's published 0.49B)
    "Qwen2.5-0.5B": ("Qwen2ForCausalLM", "causal", 151936, 0, 494_032_768),
    # Llama, d 2,048, 22 layers, 32 query heads of 64, 4 key-value heads, SwiGLU 5,632,
    # untied: embeddings 2 x 32,000 x 2,048 = 131,072,000; a layer q, o 2 x 2,048^2 + k, v
    # 2 x 2,048 x 256 + MLP 3 x 2,048 x 5,632 + 2 RMSNorms 4,096 = 44,044,288, x 22 =
    # 968,974,336; final norm 2,048: 1,100,048,384 (TinyLlama's 1.1B)
    "TinyLlama-1.1B-intermediate-step-1431k-3T": ("LlamaForCausalLM", "causal", 32000, 0,
                                                  1_100_048_384),
    # BERT-large, d 1,024, 24 layers, ff 4,096: embeddings (30,522 + 512 + 2) x 1,024 +
    # LayerNorm 2,048 = 31,782,912; a layer 4 x (1,024^2 + 1,024) + 1,024 x 4,096 + 4,096 +
    # 4,096 x 1,024 + 1,024 + 2 LayerNorms 4,096 = 12,596,224, x 24 = 302,309,376; no pooler;
    # the MLM head's transform 1,024^2 + 1,024 + LayerNorm 2,048 and decoder bias 30,522
    # (its weight is the word embedding's): 335,174,458, BertForMaskedLM's ~335M
    "bert-large-uncased": ("BertForMaskedLM", "masked", 30522, 512, 335_174_458),
    # GPT-2 with 6 layers, tied head counted once: wte 50,257 x 768 = 38,597,376, wpe
    # 1,024 x 768 = 786,432; a layer 7,087,872 (as gpt2's), x 6 = 42,527,232; ln_f 1,536:
    # 81,912,576
    "distilgpt2": ("GPT2LMHeadModel", "causal", 50257, 1024, 81_912_576),
    # GPT-Neo, d 768, 12 layers (global and local attention alternating, window 256), FFN
    # 4 x 768, tied: wte 38,597,376 + wpe 2,048 x 768 = 1,572,864; a layer 2 LayerNorms
    # 3,072 + q, k, v without bias 3 x 768^2 + out 768^2 + 768 + MLP 768 x 3,072 + 3,072 +
    # 3,072 x 768 + 768 = 7,085,568, x 12 = 85,026,816; ln_f 1,536: 125,198,592
    "gpt-neo-125m": ("GPTNeoForCausalLM", "causal", 50257, 2048, 125_198_592),
    # BLOOM, d 1,024, 24 layers, 16 heads, ALiBi (no positions), vocab 250,880, tied:
    # embeddings 250,880 x 1,024 = 256,901,120 + their LayerNorm 2,048; a layer 2 LayerNorms
    # 4,096 + qkv 1,024 x 3,072 + 3,072 + dense 1,024^2 + 1,024 + MLP 1,024 x 4,096 + 4,096 +
    # 4,096 x 1,024 + 1,024 = 12,596,224, x 24 = 302,309,376; ln_f 2,048: 559,214,592 (the
    # model card's figure)
    "bloom-560m": ("BloomForCausalLM", "causal", 250880, 0, 559_214_592),
    # Qwen3, d 1,024, 28 layers, 16 query heads of 128, 8 key-value heads, SwiGLU 3,072, no
    # q/k/v bias, RMSNorm on each head's q and k, tied: embeddings 151,936 x 1,024 =
    # 155,582,464; a layer q 1,024 x 2,048 + k, v 2 x 1,024 x 1,024 + o 2,048 x 1,024 + q/k
    # norms 256 + MLP 3 x 1,024 x 3,072 + 2 RMSNorms 2,048 = 15,730,944, x 28 = 440,466,432
    # (the model card's 0.44B non-embedding); final norm 1,024: 596,049,920 (its 0.6B)
    "Qwen3-0.6B": ("Qwen3ForCausalLM", "causal", 151936, 0, 596_049_920),
    # ALBERT, one layer shared by all 12 (d 768, ff 3,072), embeddings of 128: word 30,000 x
    # 128 + positions 512 x 128 + 2 types x 128 + LayerNorm 256 = 3,906,048; mapping in 128 x
    # 768 + 768 = 99,072; the shared layer 4 x (768^2 + 768) + 1,536 + 768 x 3,072 + 3,072 +
    # 3,072 x 768 + 768 + 1,536 = 7,087,872 (AlbertModel with its pooler 768^2 + 768:
    # 11,683,584, the published 11.7M); no pooler here; the MLM head's dense 768 x 128 + 128,
    # LayerNorm 256 and bias 30,000 (its decoder weight is the word embedding's): 11,221,680
    "albert-base-v2": ("AlbertForMaskedLM", "masked", 30000, 512, 11_221_680),
    # XLM-RoBERTa base, RoBERTa's layers with a 250,002-token vocabulary: word embeddings
    # 250,002 x 768 = 192,001,536, positions 514 x 768 = 394,752, one token type 768,
    # LayerNorm 1,536; a layer 7,087,872 (as BERT-base's), x 12 = 85,054,464; the MLM head's
    # dense 768^2 + 768 = 590,592, LayerNorm 1,536 and bias 250,002 (its decoder weight is the
    # word embedding's): 278,295,186, the model card's 278M
    "xlm-roberta-base": ("XLMRobertaForMaskedLM", "masked", 250002, 512, 278_295_186),
}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_shipped_config_builds_the_published_model(name):
    pytest.importorskip("transformers")
    import torch
    from snsim.torchsim.models import _hf_positions, hf_config, hf_head, resolve_model
    arch, head, vocab, positions, params = PRESETS[name]
    config = hf_config(name)
    assert hf_head(config) == head
    assert _hf_positions(config) == positions
    spec = resolve_model(f"hf:{name}")
    assert (spec.name, spec.tokens, spec.vocab_size) == (name, True, vocab)
    assert spec.input_shape == (min(512, positions or 512),)
    with torch.device("meta"):
        model = spec.build()
    assert type(model.model).__name__ == arch
    assert sum(p.numel() for p in model.parameters()) == params
    # fp32 master weights whatever the config's torch_dtype (Pythia float16, Qwen2.5 bfloat16)
    assert {p.dtype for p in model.parameters()} == {torch.float32}


def test_an_organisation_prefix_reads_the_same_file():
    """hf:ORG/NAME reads NAME.json, as the README says (no local cache here to shadow it)."""
    pytest.importorskip("transformers")
    from snsim.torchsim.models import resolve_model
    assert resolve_model("hf:EleutherAI/pythia-160m").name == "pythia-160m"
    assert resolve_model("hf:distilbert/distilgpt2").vocab_size == 50257


def test_every_shipped_config_has_a_row_in_the_sources_table():
    from snsim.torchsim.models import HF_CONFIG_DIR
    shipped = {f for f in os.listdir(HF_CONFIG_DIR) if f.endswith(".json")}
    with open(os.path.join(HF_CONFIG_DIR, "README.md")) as f:
        rows = set(re.findall(r"^\| (\S+\.json) \| https://huggingface\.co/", f.read(), re.M))
    assert shipped == rows
    assert {f"{n}.json" for n in PRESETS} <= shipped
