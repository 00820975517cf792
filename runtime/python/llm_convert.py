#!/usr/bin/env python3
"""Converts a Gemma 3 GGUF file into what sift's local language model runs.

    python3 llm_convert.py --gguf gemma-3-270m-q4_k_m.gguf --out DIR [--bits 4|8]

writes into DIR:
- model.onnx: the decoder as an ONNX graph (onnxruntime-genai's I/O names: input_ids,
  attention_mask, position_ids, past_key_values.N.key/value in; logits, present.N.key/value
  out). Logits are computed for the last position only (a 1,000-token prompt would otherwise
  produce a 1 GB logits tensor and spend most of its time in the 262k-row output layer).
  Weight matrices are onnxruntime's com.microsoft MatMulNBits (block-quantised, 4 or 8 bits);
  the token embedding is the same quantised table as the (tied) output layer, gathered and
  dequantised in the graph, so it is stored once.
- tokenizer.json: a Hugging Face `tokenizers` file built from the GGUF's SentencePiece vocabulary
  (tokens, scores, token types): BPE with merges derived from the scores, byte fallback,
  control and user-defined tokens as added tokens.
- chat_template.jinja: the GGUF's `tokenizer.chat_template`, or Gemma's own template when the
  file has none.
- sift-model.toml: identity, architecture, special token ids and the context window.

Needs only numpy, gguf and onnx (no torch). The GGUF is read with gguf.GGUFReader and every
tensor is dequantised with gguf.quants.dequantize, then re-quantised per block of 32 values
along the input dimension. Nothing is downloaded.
"""

import argparse
import hashlib
import heapq
import json
import math
import os
import sys
import time

import numpy as np

# --- reading the GGUF ---------------------------------------------------------------------


def say(msg):
    print(f"llm_convert: {msg}", file=sys.stderr, flush=True)


class Gguf:
    def __init__(self, path):
        import gguf

        self._gguf = gguf
        self.reader = gguf.GGUFReader(path)
        self.fields = self.reader.fields
        self.tensors = {t.name: t for t in self.reader.tensors}

    def meta(self, key, default=None):
        f = self.fields.get(key)
        if f is None:
            return default
        return f.contents()

    def weight(self, name):
        """The tensor as float32, in numpy's [rows, cols] order (GGUF ne1 x ne0)."""
        t = self.tensors[name]
        a = self._gguf.quants.dequantize(t.data, t.tensor_type)
        return np.ascontiguousarray(a, dtype=np.float32).reshape([int(x) for x in reversed(t.shape)])


def hyper_parameters(g):
    arch = g.meta("general.architecture")
    if arch != "gemma3":
        raise SystemExit(f"llm_convert: {arch!r} models are not supported (only gemma3)")
    p = lambda k, d=None: g.meta(f"{arch}.{k}", d)  # noqa: E731
    hidden = int(p("embedding_length"))
    heads = int(p("attention.head_count"))
    hp = {
        "architecture": arch,
        "layers": int(p("block_count")),
        "hidden": hidden,
        "ffn": int(p("feed_forward_length")),
        "heads": heads,
        "kv_heads": int(p("attention.head_count_kv", heads)),
        "head_dim": int(p("attention.key_length", hidden // heads)),
        "rms_eps": float(p("attention.layer_norm_rms_epsilon", 1e-6)),
        "rope_global": float(p("rope.freq_base", 1_000_000.0)),
        # Gemma 3's local (sliding-window) layers use base 10,000; llama.cpp hard-codes it too.
        "rope_local": float(p("rope.freq_base_swa", 10_000.0)),
        "sliding_window": int(p("attention.sliding_window", 512)),
        # Every sixth layer is global (llama.cpp: set_swa_pattern(6)).
        "sliding_pattern": int(p("attention.sliding_window_pattern", 6)),
        "context_length": int(p("context_length", 32768)),
    }
    # Gemma 3 scales queries by query_pre_attn_scalar**-0.5, which is head_dim for every size
    # but 27B (where it is hidden/heads); GGUF does not store it.
    hp["query_pre_attn_scalar"] = hp["head_dim"]
    if p("rope.scaling.type") not in (None, "none"):
        raise SystemExit("llm_convert: RoPE scaling is not supported")
    return hp


# --- quantisation (MatMulNBits layout) ----------------------------------------------------

BLOCK = 32


def quantize(w, bits):
    """Symmetric block quantisation of w [N, K] along K, in MatMulNBits' layout: B [N, K/32,
    32*bits/8] uint8 (4 bits: low nibble first), scales [N * K/32] float32; the zero point is
    the default 2**(bits-1)."""
    n, k = w.shape
    assert k % BLOCK == 0, (n, k)
    blocks = w.reshape(n, k // BLOCK, BLOCK)
    qmax = (1 << (bits - 1)) - 1
    absmax = np.abs(blocks).max(axis=2, keepdims=True)
    scale = np.where(absmax > 0, absmax / qmax, 1.0).astype(np.float32)
    q = np.clip(np.rint(blocks / scale), -qmax - 1, qmax).astype(np.int16) + (qmax + 1)
    q = q.astype(np.uint8)
    if bits == 4:
        q = (q[:, :, 0::2] | (q[:, :, 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(q), scale.reshape(-1).astype(np.float32)


def dequantize(q, scale, bits):
    """The float weights [N, K] that quantize() stands for (what onnxruntime computes with)."""
    n, nb, _ = q.shape
    if bits == 4:
        v = np.empty((n, nb, BLOCK), dtype=np.int16)
        v[:, :, 0::2] = q & 15
        v[:, :, 1::2] = q >> 4
    else:
        v = q.astype(np.int16)
    v = (v - (1 << (bits - 1))).astype(np.float32) * scale.reshape(n, nb, 1)
    return v.reshape(n, nb * BLOCK)


# --- the graph ----------------------------------------------------------------------------


class Graph:
    def __init__(self):
        from onnx import helper

        self.h = helper
        self.nodes = []
        self.inits = []
        self.n = 0

    def name(self, base):
        self.n += 1
        return f"{base}_{self.n}"

    def init(self, name, array):
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def const(self, array, base="c"):
        return self.init(self.name(base), array)

    def op(self, op_type, inputs, outputs=1, domain=None, base=None, **attrs):
        base = base or op_type.lower()
        outs = [self.name(base) for _ in range(outputs)] if isinstance(outputs, int) else outputs
        node = self.h.make_node(op_type, inputs, outs, name=self.name(f"n_{base}"), **attrs)
        if domain:
            node.domain = domain
        self.nodes.append(node)
        return outs[0] if len(outs) == 1 else outs


def build(g, hp, bits, out_path, context_window):
    from onnx import TensorProto, helper

    G = Graph()
    L, D, F = hp["layers"], hp["hidden"], hp["ffn"]
    H, KV, HD = hp["heads"], hp["kv_heads"], hp["head_dim"]
    eps = hp["rms_eps"]

    i64 = lambda *v: G.const(np.array(v, dtype=np.int64))  # noqa: E731
    f32 = lambda *v: G.const(np.array(v, dtype=np.float32))  # noqa: E731

    def rms(x, weight_name, gguf_name):
        # GGUF stores Gemma's (1 + weight) already (llama.cpp's converter adds the 1).
        w = G.init(weight_name, g.weight(gguf_name).astype(np.float32))
        return G.op("SimplifiedLayerNormalization", [x, w], axis=-1, epsilon=eps, base="rms")

    def linear(x, gguf_name, init_name, n_out):
        w = g.weight(gguf_name)  # [N, K]
        assert w.shape[0] == n_out, (gguf_name, w.shape)
        q, s = quantize(w, bits)
        bq = G.init(init_name + ".qweight", q)
        bs = G.init(init_name + ".scales", s)
        return G.op(
            "MatMulNBits", [x, bq, bs], domain="com.microsoft", base="mm",
            K=w.shape[1], N=n_out, bits=bits, block_size=BLOCK, accuracy_level=4,
        )

    # Inputs and outputs.
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"]),
        helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"]),
    ]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1, "vocab"])]
    for i in range(L):
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(
                f"past_key_values.{i}.{kind}", TensorProto.FLOAT, ["batch", KV, "past", HD]))
            outputs.append(helper.make_tensor_value_info(
                f"present.{i}.{kind}", TensorProto.FLOAT, ["batch", KV, "total", HD]))

    # Embedding: the output layer's quantised table, gathered and dequantised.
    say("quantising the embedding / output table")
    emb = g.weight("token_embd.weight")  # [V, D]
    V = emb.shape[0]
    eq, es = quantize(emb, bits)
    del emb
    eq_name = G.init("embed.qweight", eq)
    es_name = G.init("embed.scales", es)
    nb = D // BLOCK
    rows = G.op("Gather", [eq_name, "input_ids"], axis=0, base="emb_rows")  # [B,S,nb,blob]
    if bits == 4:
        lo = G.op("BitwiseAnd", [rows, G.const(np.array(15, dtype=np.uint8))])
        hi = G.op("BitShift", [rows, G.const(np.array(4, dtype=np.uint8))], direction="RIGHT")
        lo = G.op("Unsqueeze", [lo, i64(-1)])
        hi = G.op("Unsqueeze", [hi, i64(-1)])
        rows = G.op("Concat", [lo, hi], axis=-1)  # [B,S,nb,16,2]
    vals = G.op("Cast", [rows], to=TensorProto.FLOAT)
    shape_bs = G.op("Shape", ["input_ids"])  # [B, S]
    vals = G.op("Reshape", [vals, G.op("Concat", [shape_bs, i64(nb, BLOCK)], axis=0)])
    vals = G.op("Sub", [vals, f32(float(1 << (bits - 1)))])
    scales = G.op("Reshape", [es_name, i64(V, nb, 1)])
    srows = G.op("Gather", [scales, "input_ids"], axis=0)  # [B,S,nb,1]
    x = G.op("Mul", [vals, srows])
    x = G.op("Reshape", [x, G.op("Concat", [shape_bs, i64(D)], axis=0)])
    # Gemma scales embeddings by sqrt(hidden).
    x = G.op("Mul", [x, f32(math.sqrt(D))], base="embed")

    # Masks: key position (from the attention mask, so left padding works) against query
    # position; causal everywhere, plus the sliding window on local layers.
    kpos = G.op("Sub", [G.op("CumSum", ["attention_mask", i64(1)]), i64(1)])  # [B,T]
    kpos4 = G.op("Unsqueeze", [kpos, i64(1, 2)])  # [B,1,1,T]
    qpos4 = G.op("Unsqueeze", ["position_ids", i64(1, 3)])  # [B,1,S,1]
    causal = G.op("LessOrEqual", [kpos4, qpos4])
    present_mask = G.op("Unsqueeze", [G.op("Equal", ["attention_mask", i64(1)]), i64(1, 2)])
    allowed_global = G.op("And", [causal, present_mask])
    dist = G.op("Sub", [qpos4, kpos4])
    in_window = G.op("Less", [dist, i64(hp["sliding_window"])])
    allowed_local = G.op("And", [allowed_global, in_window])
    zero, neg = f32(0.0), f32(-1e30)
    mask_global = G.op("Where", [allowed_global, zero, neg], base="mask_global")
    mask_local = G.op("Where", [allowed_local, zero, neg], base="mask_local")

    # Rotary tables from the positions (NeoX layout: the head's two halves rotate together).
    posf = G.op("Unsqueeze", [G.op("Cast", ["position_ids"], to=TensorProto.FLOAT), i64(-1)])
    rope = {}
    for kind, base in (("global", hp["rope_global"]), ("local", hp["rope_local"])):
        inv = (1.0 / (base ** (np.arange(0, HD, 2, dtype=np.float64) / HD))).astype(np.float32)
        freqs = G.op("Mul", [posf, G.const(inv)])  # [B,S,HD/2]
        freqs = G.op("Unsqueeze", [freqs, i64(1)])  # [B,1,S,HD/2]
        rope[kind] = (G.op("Cos", [freqs]), G.op("Sin", [freqs]))

    def rotate(t, cos, sin):
        a, b = G.op("Split", [t, i64(HD // 2, HD // 2)], outputs=2, axis=-1)
        ra = G.op("Sub", [G.op("Mul", [a, cos]), G.op("Mul", [b, sin])])
        rb = G.op("Add", [G.op("Mul", [b, cos]), G.op("Mul", [a, sin])])
        return G.op("Concat", [ra, rb], axis=-1)

    shape_bsh = lambda n, d: G.op("Concat", [shape_bs, i64(n, d)], axis=0)  # noqa: E731
    scale = 1.0 / math.sqrt(hp["query_pre_attn_scalar"])
    for i in range(L):
        if i % 3 == 0:
            say(f"layer {i + 1}/{L}")
        local = (i + 1) % hp["sliding_pattern"] != 0
        cos, sin = rope["local" if local else "global"]
        pre = f"layers.{i}"
        h = rms(x, f"{pre}.attn_norm", f"blk.{i}.attn_norm.weight")
        q = linear(h, f"blk.{i}.attn_q.weight", f"{pre}.q", H * HD)
        k = linear(h, f"blk.{i}.attn_k.weight", f"{pre}.k", KV * HD)
        v = linear(h, f"blk.{i}.attn_v.weight", f"{pre}.v", KV * HD)
        q = G.op("Reshape", [q, shape_bsh(H, HD)])
        k = G.op("Reshape", [k, shape_bsh(KV, HD)])
        v = G.op("Reshape", [v, shape_bsh(KV, HD)])
        q = rms(q, f"{pre}.q_norm", f"blk.{i}.attn_q_norm.weight")
        k = rms(k, f"{pre}.k_norm", f"blk.{i}.attn_k_norm.weight")
        q = G.op("Transpose", [q], perm=[0, 2, 1, 3])  # [B,H,S,HD]
        k = G.op("Transpose", [k], perm=[0, 2, 1, 3])  # [B,KV,S,HD]
        v = G.op("Transpose", [v], perm=[0, 2, 1, 3])
        q = G.op("Mul", [rotate(q, cos, sin), f32(scale)])
        k = rotate(k, cos, sin)
        kc = G.op("Concat", [f"past_key_values.{i}.key", k], [f"present.{i}.key"], axis=2)
        vc = G.op("Concat", [f"past_key_values.{i}.value", v], [f"present.{i}.value"], axis=2)
        # Grouped-query attention: the H query heads, H/KV per key/value head, are stacked
        # along the sequence axis ([B,KV,(H/KV)*S,HD]) so one MatMul serves each group.
        qg = G.op("Reshape", [q, i64(0, KV, -1, HD)])
        scores = G.op("MatMul", [qg, G.op("Transpose", [kc], perm=[0, 1, 3, 2])])
        scores = G.op("Reshape", [scores, i64(0, H, -1, 0)])  # [B,H,S,T]
        scores = G.op("Add", [scores, mask_local if local else mask_global])
        probs = G.op("Softmax", [scores], axis=-1)
        probs = G.op("Reshape", [probs, i64(0, KV, -1, 0)])
        att = G.op("MatMul", [probs, vc])  # [B,KV,(H/KV)*S,HD]
        att = G.op("Reshape", [att, i64(0, H, -1, HD)])
        att = G.op("Transpose", [att], perm=[0, 2, 1, 3])  # [B,S,H,HD]
        att = G.op("Reshape", [att, G.op("Concat", [shape_bs, i64(H * HD)], axis=0)])
        o = linear(att, f"blk.{i}.attn_output.weight", f"{pre}.o", D)
        o = rms(o, f"{pre}.post_attention_norm", f"blk.{i}.post_attention_norm.weight")
        x = G.op("Add", [x, o])
        h = rms(x, f"{pre}.ffn_norm", f"blk.{i}.ffn_norm.weight")
        gate = linear(h, f"blk.{i}.ffn_gate.weight", f"{pre}.gate", F)
        up = linear(h, f"blk.{i}.ffn_up.weight", f"{pre}.up", F)
        act = G.op("Gelu", [gate], approximate="tanh")
        down = linear(G.op("Mul", [act, up]), f"blk.{i}.ffn_down.weight", f"{pre}.down", D)
        down = rms(down, f"{pre}.post_ffw_norm", f"blk.{i}.post_ffw_norm.weight")
        x = G.op("Add", [x, down])

    x = rms(x, "final_norm", "output_norm.weight")
    last = G.op("Slice", [x, i64(-1), i64(np.iinfo(np.int64).max), i64(1)])  # [B,1,D]
    G.op(
        "MatMulNBits", [last, eq_name, es_name], ["logits"], domain="com.microsoft",
        K=D, N=V, bits=bits, block_size=BLOCK, accuracy_level=4,
    )

    graph = helper.make_graph(G.nodes, "gemma3_decoder", inputs, outputs, G.inits)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
        producer_name="sift llm_convert.py",
    )
    model.ir_version = 10
    import onnx

    say(f"writing {out_path}")
    onnx.save_model(model, out_path)
    return V


# --- the tokenizer ------------------------------------------------------------------------

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def vocabulary(g):
    tokens = [str(t) for t in g.meta("tokenizer.ggml.tokens")]
    scores = [float(s) for s in g.meta("tokenizer.ggml.scores")]
    types = [int(t) for t in g.meta("tokenizer.ggml.token_type")]
    return tokens, scores, types


def merges_from_scores(tokens, scores, types):
    """SentencePiece BPE merges two adjacent pieces when their concatenation is a normal piece,
    highest score first. As a ranked merge list: every split of every normal piece into two
    normal pieces, ordered by the merged piece's score (Hugging Face's SentencePieceExtractor
    does the same)."""
    ids = {t: i for i, t in enumerate(tokens) if types[i] == NORMAL}
    merges = []
    for piece, pid in ids.items():
        for cut in range(1, len(piece)):
            a, b = piece[:cut], piece[cut:]
            if a in ids and b in ids:
                merges.append((-scores[pid], ids[a], ids[b], a, b))
    merges.sort()
    return [[a, b] for _, _, _, a, b in merges]


def tokenizer_json(g):
    tokens, scores, types = vocabulary(g)
    model = g.meta("tokenizer.ggml.model")
    if model != "llama":
        raise SystemExit(f"llm_convert: tokenizer {model!r} is not supported (only SentencePiece)")
    if g.meta("tokenizer.ggml.add_space_prefix", False):
        raise SystemExit("llm_convert: add_space_prefix tokenizers are not supported")
    bos = int(g.meta("tokenizer.ggml.bos_token_id"))
    unk = int(g.meta("tokenizer.ggml.unknown_token_id", 3))
    added = [
        {
            "id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": types[i] == CONTROL,
        }
        for i, t in enumerate(tokens)
        if types[i] in (CONTROL, USER_DEFINED)
    ]
    post = None
    if g.meta("tokenizer.ggml.add_bos_token", True):
        post = {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": tokens[bos], "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": tokens[bos], "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {tokens[bos]: {"id": tokens[bos], "ids": [bos], "tokens": [tokens[bos]]}},
        }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
        "pre_tokenizer": None,
        "post_processor": post,
        "decoder": {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
            ],
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": tokens[unk],
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": {t: i for i, t in enumerate(tokens)},
            "merges": merges_from_scores(tokens, scores, types),
        },
    }


def spm_reference_encode(text, tokens, scores, types, bos=None):
    """An independent SentencePiece-BPE encoder (llama.cpp's algorithm) to check tokenizer.json
    against: control and user-defined tokens matched first (leftmost, longest), then in each
    piece of plain text spaces become U+2581 and adjacent symbols merge, highest-scoring
    merged piece first (leftmost on ties); symbols not in the vocabulary fall back to bytes."""
    ids = {t: i for i, t in enumerate(tokens)}
    specials = sorted((t for i, t in enumerate(tokens) if types[i] in (CONTROL, USER_DEFINED)),
                      key=len, reverse=True)
    by_first = {}
    for s in specials:
        by_first.setdefault(s[0], []).append(s)
    out = [bos] if bos is not None else []
    frag = []

    def flush():
        if not frag:
            return
        syms = list("".join(frag).replace(" ", "\u2581"))
        frag.clear()
        while True:
            best = None
            for j in range(len(syms) - 1):
                m = syms[j] + syms[j + 1]
                tid = ids.get(m)
                if tid is not None and types[tid] == NORMAL:
                    if best is None or scores[tid] > best[0]:
                        best = (scores[tid], j)
            if best is None:
                break
            j = best[1]
            syms[j:j + 2] = [syms[j] + syms[j + 1]]
        for s in syms:
            tid = ids.get(s)
            if tid is not None and types[tid] in (NORMAL, USER_DEFINED):
                out.append(tid)
            else:
                out.extend(ids[f"<0x{b:02X}>"] for b in s.encode("utf-8"))

    i = 0
    while i < len(text):
        hit = next((s for s in by_first.get(text[i], []) if text.startswith(s, i)), None)
        if hit is not None:
            flush()
            out.append(ids[hit])
            i += len(hit)
        else:
            frag.append(text[i])
            i += 1
    flush()
    return out


# Gemma 3's chat template (from its Hugging Face tokenizer_config.json), for GGUF files that
# do not carry `tokenizer.chat_template`.
GEMMA3_CHAT_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else "") }}
    {{- message['content'] | trim }}
    {{- '<end_of_turn>\\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{ '<start_of_turn>model\\n' }}
{%- endif -%}
"""


def sha256(path):
    d = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            d.update(block)
    return d.hexdigest()


def toml_str(s):
    return json.dumps(s, ensure_ascii=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bits", type=int, choices=(4, 8), default=8)
    ap.add_argument("--context", type=int, default=8192,
                    help="the context window written to sift-model.toml (capped by the model's)")
    ap.add_argument("--name", default="gemma-3-270m")
    ap.add_argument("--source", default="")
    ap.add_argument("--check-tokenizer", action="store_true",
                    help="compare tokenizer.json with the reference encoder on sample strings")
    args = ap.parse_args()

    start = time.time()
    os.makedirs(args.out, exist_ok=True)
    say(f"reading {args.gguf}")
    g = Gguf(args.gguf)
    hp = hyper_parameters(g)
    window = min(args.context, hp["context_length"])

    say("building tokenizer.json")
    tj = tokenizer_json(g)
    with open(os.path.join(args.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False)
    template = g.meta("tokenizer.chat_template")
    template_source = "gguf" if template else "gemma3-builtin"
    with open(os.path.join(args.out, "chat_template.jinja"), "w", encoding="utf-8") as f:
        f.write(str(template) if template else GEMMA3_CHAT_TEMPLATE)

    say(f"building the decoder graph ({args.bits}-bit weights)")
    vocab = build(g, hp, args.bits, os.path.join(args.out, "model.onnx"), window)

    tokens, _, _ = vocabulary(g)
    eos = [int(g.meta("tokenizer.ggml.eos_token_id", 1))]
    if "<end_of_turn>" in tokens:
        eos.append(tokens.index("<end_of_turn>"))
    bos = int(g.meta("tokenizer.ggml.bos_token_id"))
    lines = [
        f"id = {toml_str(f'{args.name}-gguf-q4km-int{args.bits}-v1')}",
        'kind = "decoder"',
        f"name = {toml_str(args.name)}",
        f"architecture = {toml_str(hp['architecture'])}",
        f"source = {toml_str(args.source or os.path.basename(args.gguf))}",
        f"gguf_sha256 = {toml_str(sha256(args.gguf))}",
        f"weight_bits = {args.bits}",
        f"context_window = {window}",
        f"vocab_size = {vocab}",
        f"layers = {hp['layers']}",
        f"kv_heads = {hp['kv_heads']}",
        f"head_dim = {hp['head_dim']}",
        f"bos_token_id = {bos}",
        f"eos_token_ids = {eos}",
        'logits = "last"',
        'chat_template = "chat_template.jinja"',
        f"chat_template_source = {toml_str(template_source)}",
        "",
        "[hyper_parameters]",
    ] + [f"{k} = {toml_str(v) if isinstance(v, str) else v}" for k, v in hp.items()]
    with open(os.path.join(args.out, "sift-model.toml"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    say(f"done in {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
