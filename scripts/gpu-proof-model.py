#!/usr/bin/env python3
"""The model the GPU proof serves: a Llama-architecture GGUF with random weights and a real
tokenizer's vocabulary, written where it runs, since a model that loads an H100 does not fit in the
60 MiB the proof may carry.

  gpu-proof-model.py vocab SRC.gguf OUT.gguf
      Keeps only SRC's tokenizer (every `tokenizer.*` key, no tensors): about 2 MB for
      SmolLM2's 49,152-token BPE vocabulary. Run where the bundle is made.
  gpu-proof-model.py model VOCAB.gguf OUT.gguf [--hidden H --layers L --ff F --heads N --kv-heads K]
      A llama model of those shapes in f16, its tokenizer VOCAB's, its weights drawn once from a
      seeded N(0, 0.02) pool and sliced (the numbers are meaningless; the arithmetic is the
      real model's), except that it only ever emits ordinary tokens that are whole UTF-8, and
      that its output head is scaled so that a text token's logit varies by about --logit-std
      (3.5) from token to token: sampled at temperature 1 it then repeats its own most likely
      token often but not always, which gives a self-draft a partial acceptance (measured
      with llama-server on a CPU: 45 %, 19 % and 17 % of drafted tokens at 4 layers of hidden
      256, 512 and 2048). The defaults make about 1.1 B parameters (2.1 GB): enough to keep
      an H100 busy through llama.cpp's Vulkan backend. Run where the model is served.

Needs the `gguf` package (llama.cpp's own GGUF writer) and numpy.
"""
import argparse
import sys

import numpy as np
import gguf


def copy_tokenizer(reader: gguf.GGUFReader, writer: gguf.GGUFWriter) -> int:
    """Every `tokenizer.*` key of reader into writer, types kept; how many there were."""
    kept = 0
    for key, field in reader.fields.items():
        if key.startswith("tokenizer."):
            vtype = field.types[0]
            sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
            writer.add_key_value(key, field.contents(), vtype, sub)
            kept += 1
    return kept


def vocab(src: str, out: str) -> None:
    writer = gguf.GGUFWriter(out, "llama")
    kept = copy_tokenizer(gguf.GGUFReader(src), writer)
    if kept == 0:
        sys.exit(f"gpu-proof-model: {src} holds no tokenizer.* keys")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"gpu-proof-model: {out}: {kept} tokenizer keys from {src}")


def text_tokens(reader: gguf.GGUFReader) -> np.ndarray:
    """Per token: True when it is an ordinary token whose bytes are whole UTF-8 on their own
    (GPT-2 byte-level BPE: each character of the token stands for one byte)."""
    kind = reader.fields["tokenizer.ggml.model"].contents()
    if kind != "gpt2":
        sys.exit(f"gpu-proof-model: a byte-level BPE (gpt2) vocabulary is needed, not {kind}")
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    byte_of = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            byte_of[chr(256 + extra)] = b
            extra += 1
    ok = np.zeros(len(tokens), dtype=bool)
    for i, (token, kind) in enumerate(zip(tokens, types)):
        if kind != gguf.TokenType.NORMAL or any(ch not in byte_of for ch in token):
            continue
        try:
            bytes(byte_of[ch] for ch in token).decode("utf-8")
            ok[i] = True
        except UnicodeDecodeError:
            pass
    return ok


def model(vocab_path: str, out: str, a: argparse.Namespace) -> None:
    reader = gguf.GGUFReader(vocab_path)
    tokens = reader.fields["tokenizer.ggml.tokens"]
    n_vocab = len(tokens.data)
    head_dim = a.hidden // a.heads
    writer = gguf.GGUFWriter(out, "llama")
    writer.add_name(f"provebench gpu-proof random llama {a.layers}x{a.hidden}")
    writer.add_context_length(a.context)
    writer.add_embedding_length(a.hidden)
    writer.add_block_count(a.layers)
    writer.add_feed_forward_length(a.ff)
    writer.add_head_count(a.heads)
    writer.add_head_count_kv(a.kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    copy_tokenizer(reader, writer)

    kv = a.kv_heads * head_dim
    shapes = {"token_embd.weight": (n_vocab, a.hidden), "output.weight": (n_vocab, a.hidden),
              "output_norm.weight": (a.hidden,)}
    for i in range(a.layers):
        b = f"blk.{i}."
        shapes.update({
            b + "attn_norm.weight": (a.hidden,),
            b + "attn_q.weight": (a.hidden, a.hidden),
            b + "attn_k.weight": (kv, a.hidden),
            b + "attn_v.weight": (kv, a.hidden),
            b + "attn_output.weight": (a.hidden, a.hidden),
            b + "ffn_norm.weight": (a.hidden,),
            b + "ffn_gate.weight": (a.ff, a.hidden),
            b + "ffn_up.weight": (a.ff, a.hidden),
            b + "ffn_down.weight": (a.hidden, a.ff),
        })
    # The output head's random part, scaled so that a text token's logit varies by about
    # `logit_std` from token to token: after the final RMS norm the hidden state's components
    # other than dimension 0 (each N(0, 0.02) in the embedding, which dominates the residual
    # stream of random weights) have a norm of about sqrt(H) * 0.02 / rms, rms the state's whole.
    rms = np.sqrt((a.offset ** 2 + a.hidden * 0.02 ** 2) / a.hidden)
    head_scale = a.logit_std / (0.02 * np.sqrt(a.hidden) * 0.02 / rms)
    # One pool, sliced at a different offset for each tensor: drawing a billion normals would
    # take longer than the rest of the model's writing.
    largest = max(int(np.prod(s)) for s in shapes.values())
    rng = np.random.default_rng(a.seed)
    pool = (rng.standard_normal(largest + 4099, dtype=np.float32) * 0.02).astype(np.float16)
    params = 0
    for n, (name, shape) in enumerate(shapes.items()):
        count = int(np.prod(shape))
        params += count
        start = (n * 4099) % (len(pool) - count + 1)
        if len(shape) == 1:  # RMS-norm weights: ones, as a trained model's are near
            writer.add_tensor(name, np.ones(shape, dtype=np.float32))
        elif name == "token_embd.weight":
            # Hidden dimension 0 carries a constant (--offset) through every layer, so that it
            # stays positive after the final norm, where output.weight turns it into a logit
            # offset: about as large as the rest of the state, so that the layers still count.
            t = pool[start:start + count].reshape(shape).copy()
            t[:, 0] = a.offset
            writer.add_tensor(name, t)
        elif name == "output.weight":
            # Random logits, except that a token which is not ordinary text (a control token, or a
            # byte-level piece that is not whole UTF-8) sits 2 * offset / rms below every other (27
            # logits at hidden 256, 44 at 2048, where the random part's spread is 3.5): random
            # weights would otherwise emit them, and an engine that parses its own output (llama.cpp's
            # chat parser) fails the request on text that is not UTF-8.
            t = pool[start:start + count].reshape(shape).astype(np.float32) * head_scale
            t[:, 0] = np.where(text_tokens(reader), 1.0, -1.0)
            t = t.astype(np.float16)
            writer.add_tensor(name, t)
        else:
            writer.add_tensor(name, pool[start:start + count].reshape(shape))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"gpu-proof-model: {out}: {params / 1e9:.2f} B parameters, f16, vocabulary {n_vocab}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("vocab")
    v.add_argument("src")
    v.add_argument("out")
    m = sub.add_parser("model")
    m.add_argument("vocab")
    m.add_argument("out")
    m.add_argument("--hidden", type=int, default=2048)
    m.add_argument("--layers", type=int, default=16)
    m.add_argument("--ff", type=int, default=8192)
    m.add_argument("--heads", type=int, default=32)
    m.add_argument("--kv-heads", type=int, default=8)
    m.add_argument("--context", type=int, default=8192)
    m.add_argument("--seed", type=int, default=20261127)
    m.add_argument("--offset", type=float, default=0.5)
    m.add_argument("--logit-std", type=float, default=3.5)
    a = p.parse_args()
    if a.cmd == "vocab":
        vocab(a.src, a.out)
    else:
        model(a.vocab, a.out, a)


if __name__ == "__main__":
    main()
