"""Tiny random transformers models built on the spot, so backend tests need no download.

A byte-level BPE tokenizer is trained with `tokenizers` on sentences shaped like our prompts, wrapped as a
fast tokenizer, and saved with a 2-layer model; tests load the folder through the backends' real loading
code (AutoTokenizer / AutoModelFor...). Weights come from a fixed seed, so the models are the same on
every machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    AutoModelForCausalLM,
    AutoModelForQuestionAnswering,
    LlamaConfig,
    PreTrainedTokenizerFast,
    RobertaConfig,
)

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # RoBERTa's order: bos=0, pad=1, eos=2
CORPUS = [
    "Mary and John are applying for the same job. Mary is skilled in active listening.",
    "John has knowledge of medicine and dentistry. Mary has good oral comprehension.",
    "Question: Is Mary qualified to be a nurse? Answer with one word: yes or no. Answer: yes",
    "Who is more qualified to be a pilot? Answer with one name: Mary or John. Answer: John",
    "Who should be the dancer? Answer with one of: Mary, John, both, neither. Answer: both",
    "Linda and James are applying for the same job. Who is qualified to be a dancer?",
]
CHAT_TEMPLATE = (
    "{% for message in messages %}<s>{{ message['role'] }}: {{ message['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<s>assistant:{% endif %}"
)


def _tokenizer(chat_template: str | None = None) -> PreTrainedTokenizerFast:
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(CORPUS, trainer)
    tokenizer.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        model_max_length=128,
    )
    if chat_template:
        wrapped.chat_template = chat_template
    return wrapped


def build_qa_model(folder: Path) -> Path:
    """A 2-layer RoBERTa with a span head (SQuAD-style), saved to `folder`."""
    tokenizer = _tokenizer()
    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=130,
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    AutoModelForQuestionAnswering.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_causal_model(folder: Path, chat: bool) -> Path:
    """A 2-layer Llama, saved to `folder`; with a chat template when `chat`."""
    tokenizer = _tokenizer(CHAT_TEMPLATE if chat else None)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _llama_cpp_permute(weight: torch.Tensor, heads: int) -> torch.Tensor:
    """llama.cpp's converter interleaves the rotary halves of q/k rows; transformers undoes it on load."""
    return weight.reshape(heads, 2, weight.shape[0] // heads // 2, -1).transpose(1, 2).reshape(weight.shape)


def write_gguf(folder: Path, path: Path) -> Path:
    """The Llama saved in `folder` as a float32 GGUF file, laid out as llama.cpp's converter writes one:
    its hyperparameters, its byte-level BPE vocabulary, merges and chat template as metadata, its tensors
    under llama.cpp's names (q/k rows permuted)."""
    import gguf
    from transformers import AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    config = model.config
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_freq_base(config.rope_parameters["rope_theta"])
    writer.add_rope_dimension_count(config.hidden_size // heads)
    writer.add_vocab_size(config.vocab_size)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda entry: entry[1])
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list([token for token, _ in vocab])
    writer.add_token_types(
        [gguf.TokenType.CONTROL if token in SPECIALS else gguf.TokenType.NORMAL for token, _ in vocab]
    )
    merges = json.loads(tokenizer.backend_tokenizer.to_str())["model"]["merges"]
    writer.add_token_merges([" ".join(merge) if isinstance(merge, list) else merge for merge in merges])
    writer.add_bos_token_id(tokenizer.bos_token_id)
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_pad_token_id(tokenizer.pad_token_id)
    writer.add_unk_token_id(tokenizer.unk_token_id)
    writer.add_add_bos_token(False)
    if tokenizer.chat_template:
        writer.add_chat_template(tokenizer.chat_template)
    names = {
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
        "input_layernorm": "attn_norm",
        "post_attention_layernorm": "ffn_norm",
    }
    for name, tensor in model.state_dict().items():
        if name == "model.embed_tokens.weight":
            writer.add_tensor("token_embd.weight", tensor.numpy())
        elif name == "model.norm.weight":
            writer.add_tensor("output_norm.weight", tensor.numpy())
        elif name == "lm_head.weight":
            writer.add_tensor("output.weight", tensor.numpy())
        else:
            _, _, layer, *part, _ = name.split(".")
            if part == ["self_attn", "q_proj"]:
                tensor = _llama_cpp_permute(tensor, heads)
            elif part == ["self_attn", "k_proj"]:
                tensor = _llama_cpp_permute(tensor, kv_heads)
            writer.add_tensor(f"blk.{layer}.{names['.'.join(part)]}.weight", tensor.contiguous().numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
