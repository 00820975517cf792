#!/usr/bin/env python3
"""onnxruntime's own Python generation over the model llm_convert.py wrote: the reference sift's
Rust backend (runtime/src/llm/onnx.rs) is checked and benchmarked against.

    python3 llm_reference.py --model DIR generate --prompt "The capital of France is" -n 32
        greedy generation with a KV cache (prompt in one run, then one token per run); prints
        a JSON object with the prompt and generated token ids, the text, timings, the
        onnxruntime version and the processor (onnxruntime's 8-bit kernels differ by processor).
    python3 llm_reference.py --model DIR bench --prompt-tokens 1000 -n 64
        prompt tokens/s, generation tokens/s and time to first token.
    python3 llm_reference.py --model DIR perplexity --text-file FILE
        teacher-forced perplexity (one token per run through the KV cache).
    python3 llm_reference.py --model DIR check-tokenizer --gguf FILE
        tokenizer.json (Hugging Face tokenizers) against llm_convert's independent
        SentencePiece encoder on sample strings.
    python3 llm_reference.py --model DIR check-numpy --gguf FILE --prompt TEXT
        the ONNX graph against a pure-numpy forward pass over the same dequantised weights.

Needs numpy, onnxruntime and tokenizers (check-* also gguf): `sift model install --llm` puts
them (pinned) in $SIFT_HOME/python/llm-reference, for PYTHONPATH.
"""

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


# The x86 features onnxruntime's MLAS picks its kernels by. Its 8-bit MatMulNBits kernels give
# slightly different logits on different ones, so greedy tokens recorded on one processor may
# differ after a dozen tokens on another.
ISA_FLAGS = (
    "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512bw", "avx512dq", "avx512vl",
    "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16",
)


def cpu():
    """This processor as /proc/cpuinfo's first entry describes it: vendor, model name and which
    of ISA_FLAGS it has (runtime/tests/llm_onnx.rs compares the same fields)."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    flags = set(fields.get("flags", "").split())
    return {
        "vendor": fields.get("vendor_id", platform.machine() or "unknown"),
        "model_name": fields.get("model name", platform.processor()),
        "isa": {flag: flag in flags for flag in ISA_FLAGS},
    }


def load_info(model_dir):
    import tomllib

    with open(os.path.join(model_dir, "sift-model.toml"), "rb") as f:
        return tomllib.load(f)


class Decoder:
    def __init__(self, model_dir, threads=0):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.info = load_info(model_dir)
        self.onnxruntime = ort.__version__
        so = ort.SessionOptions()
        if threads:
            so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            os.path.join(model_dir, "model.onnx"), so, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.layers = self.info["layers"]
        self.kv_heads = self.info["kv_heads"]
        self.head_dim = self.info["head_dim"]

    def empty_cache(self):
        z = np.zeros((1, self.kv_heads, 0, self.head_dim), dtype=np.float32)
        return {f"past_key_values.{i}.{k}": z for i in range(self.layers) for k in ("key", "value")}

    def step(self, ids, past, start):
        """Runs `ids` after `start` cached tokens; returns the last position's logits and the
        new cache."""
        n = len(ids)
        feeds = {
            "input_ids": np.array([ids], dtype=np.int64),
            "attention_mask": np.ones((1, start + n), dtype=np.int64),
            "position_ids": np.arange(start, start + n, dtype=np.int64)[None, :],
        }
        feeds.update(past)
        names = [o.name for o in self.session.get_outputs()]
        out = self.session.run(names, feeds)
        logits = out[0][0, -1]
        present = {}
        for name, value in zip(names[1:], out[1:]):
            present[name.replace("present.", "past_key_values.")] = value
        return logits, present

    def greedy(self, prompt_ids, n, stop_at_eos=True):
        eos = set(self.info["eos_token_ids"])
        t0 = time.perf_counter()
        logits, past = self.step(prompt_ids, self.empty_cache(), 0)
        t1 = time.perf_counter()
        out = []
        pos = len(prompt_ids)
        for _ in range(n):
            tok = int(np.argmax(logits))
            out.append(tok)
            if stop_at_eos and tok in eos:
                break
            if len(out) == n:
                break
            logits, past = self.step([tok], past, pos)
            pos += 1
        t2 = time.perf_counter()
        return out, t1 - t0, t2 - t1


def bench_prompt(tokenizer, n_tokens):
    """A deterministic prose prompt of exactly n_tokens tokens (bos included)."""
    words = ("the quick brown fox jumps over a lazy dog while seven wizards quietly hum "
             "about rivers mountains and old libraries in the north").split()
    text, i = [], 0
    while True:
        text.append(words[i % len(words)])
        i += 1
        ids = tokenizer.encode(" ".join(text)).ids
        if len(ids) >= n_tokens:
            return ids[:n_tokens]


def cmd_generate(args):
    d = Decoder(args.model, args.threads)
    ids = d.tokenizer.encode(args.prompt).ids
    out, prefill, decode = d.greedy(ids, args.n, stop_at_eos=False)
    print(json.dumps({
        "model": d.info["id"],
        "prompt": args.prompt,
        "prompt_ids": ids,
        "greedy_ids": out,
        "text": d.tokenizer.decode(out),
        "prefill_s": round(prefill, 4),
        "decode_s": round(decode, 4),
        "onnxruntime": d.onnxruntime,
        "threads": args.threads,
        "cpu": cpu(),
    }, ensure_ascii=False, indent=1))


def cmd_bench(args):
    d = Decoder(args.model, args.threads)
    ids = bench_prompt(d.tokenizer, args.prompt_tokens)
    d.greedy(ids[:16], 4, stop_at_eos=False)  # warm-up
    best = None
    for _ in range(args.repeat):
        out, prefill, decode = d.greedy(ids, args.n, stop_at_eos=False)
        r = (prefill, decode, len(out))
        best = r if best is None or r[0] + r[1] < best[0] + best[1] else best
    prefill, decode, n = best
    print(json.dumps({
        "backend": "python-onnxruntime",
        "model": d.info["id"],
        "prompt_tokens": len(ids),
        "generated_tokens": n,
        "ttft_s": round(prefill, 4),
        "prompt_tok_per_s": round(len(ids) / prefill, 1),
        "gen_tok_per_s": round((n - 1) / decode, 1),
    }))


def cmd_perplexity(args):
    d = Decoder(args.model, args.threads)
    text = open(args.text_file, encoding="utf-8").read().strip()
    ids = d.tokenizer.encode(text).ids
    past, nll = d.empty_cache(), 0.0
    for pos in range(len(ids) - 1):
        logits, past = d.step([ids[pos]], past, pos)
        logits = logits.astype(np.float64)
        m = logits.max()
        lse = m + np.log(np.exp(logits - m).sum())
        nll += lse - logits[ids[pos + 1]]
    n = len(ids) - 1
    print(json.dumps({"tokens": n, "perplexity": round(float(np.exp(nll / n)), 3)}))


SAMPLES = [
    "The capital of France is",
    "Hello, world! How are you today?",
    "  leading spaces and trailing   ",
    "def main():\n    print('hi')\n\n\treturn 0\n",
    "naïve café résumé — “quotes” and ‘apostrophes’",
    "日本語のテキストと中文文本，还有한국어.",
    "emoji 🤖🚀 and rare 𝔹 characters \u0001\u007f",
    "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
    "<div class=\"x\"></div><br> mixed HTML</p>",
    "Numbers 1234567890, 3.14159 and 1e-10; URLs https://example.com/a?b=c#d",
    "fn main() { let x: Vec<u8> = vec![1, 2, 3]; println!(\"{x:?}\"); }",
    "tabs\t\tand\r\nwindows line endings",
    "ẞ Straße ǅ ﬁ ligatures ０１２ full-width",
    "a" * 50 + " " + "ab" * 20,
]


def cmd_check_tokenizer(args):
    sys.path.insert(0, HERE)
    import llm_convert
    from tokenizers import Tokenizer

    g = llm_convert.Gguf(args.gguf)
    tokens, scores, types = llm_convert.vocabulary(g)
    tok = Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))
    bos = int(g.meta("tokenizer.ggml.bos_token_id"))
    bad = 0
    for s in SAMPLES:
        want = llm_convert.spm_reference_encode(s, tokens, scores, types, bos=bos)
        got = tok.encode(s).ids
        round_trip = tok.decode(got, skip_special_tokens=False)
        ok = got == want and round_trip == tokens[bos] + s
        bad += not ok
        print(f"{'ok ' if ok else 'BAD'} {len(got):3} tokens {s[:40]!r}")
        if not ok:
            print(f"    tokenizer.json: {got}\n    reference:      {want}\n    decoded: {round_trip!r}")
    print(f"{len(SAMPLES) - bad}/{len(SAMPLES)} identical")
    sys.exit(1 if bad else 0)


def numpy_forward(g, hp, ids, bits):
    """A plain numpy Gemma 3 forward pass (whole sequence, no cache) over the weights as
    quantised for the graph; returns the logits of every position."""
    sys.path.insert(0, HERE)
    import llm_convert as lc

    def W(name):
        q, s = lc.quantize(g.weight(name), bits)
        return lc.dequantize(q, s, bits)

    D, H, KV, HD = hp["hidden"], hp["heads"], hp["kv_heads"], hp["head_dim"]
    eps = hp["rms_eps"]

    def rms(x, name):
        w = g.weight(name)
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w

    def gelu(x):
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))

    def rope(x, base):  # x [heads, S, HD]
        inv = 1.0 / base ** (np.arange(0, HD, 2) / HD)
        f = np.arange(x.shape[1])[:, None] * inv[None, :]
        c, s = np.cos(f), np.sin(f)
        a, b = x[..., : HD // 2], x[..., HD // 2:]
        return np.concatenate([a * c - b * s, b * c + a * s], -1)

    emb = W("token_embd.weight")
    S = len(ids)
    x = emb[ids] * np.sqrt(D)
    pos = np.arange(S)
    for i in range(hp["layers"]):
        local = (i + 1) % hp["sliding_pattern"] != 0
        base = hp["rope_local"] if local else hp["rope_global"]
        h = rms(x, f"blk.{i}.attn_norm.weight")
        q = (h @ W(f"blk.{i}.attn_q.weight").T).reshape(S, H, HD)
        k = (h @ W(f"blk.{i}.attn_k.weight").T).reshape(S, KV, HD)
        v = (h @ W(f"blk.{i}.attn_v.weight").T).reshape(S, KV, HD)
        q = rms(q, f"blk.{i}.attn_q_norm.weight").transpose(1, 0, 2)
        k = rms(k, f"blk.{i}.attn_k_norm.weight").transpose(1, 0, 2)
        v = v.transpose(1, 0, 2)
        q = rope(q, base) / np.sqrt(hp["query_pre_attn_scalar"])
        k = rope(k, base)
        k = np.repeat(k, H // KV, axis=0)
        v = np.repeat(v, H // KV, axis=0)
        sc = q @ k.transpose(0, 2, 1)
        allowed = pos[None, :] <= pos[:, None]
        if local:
            allowed &= (pos[:, None] - pos[None, :]) < hp["sliding_window"]
        sc = np.where(allowed[None], sc, -np.inf)
        sc = np.exp(sc - sc.max(-1, keepdims=True))
        p = sc / sc.sum(-1, keepdims=True)
        a = (p @ v).transpose(1, 0, 2).reshape(S, H * HD)
        o = rms(a @ W(f"blk.{i}.attn_output.weight").T, f"blk.{i}.post_attention_norm.weight")
        x = x + o
        h = rms(x, f"blk.{i}.ffn_norm.weight")
        f = gelu(h @ W(f"blk.{i}.ffn_gate.weight").T) * (h @ W(f"blk.{i}.ffn_up.weight").T)
        x = x + rms(f @ W(f"blk.{i}.ffn_down.weight").T, f"blk.{i}.post_ffw_norm.weight")
    x = rms(x, "output_norm.weight")
    return x @ emb.T


def cmd_check_numpy(args):
    sys.path.insert(0, HERE)
    import llm_convert

    d = Decoder(args.model, args.threads)
    g = llm_convert.Gguf(args.gguf)
    hp = llm_convert.hyper_parameters(g)
    ids = d.tokenizer.encode(args.prompt).ids
    ref = numpy_forward(g, hp, ids, d.info["weight_bits"])
    # The graph: the prompt split in two runs (prefill, then the rest through the cache), so the
    # KV cache path is checked too.
    cut = max(1, len(ids) // 2)
    _, past = d.step(ids[:cut], d.empty_cache(), 0)
    worst = 0.0
    for j in range(cut, len(ids)):
        logits, past = d.step([ids[j]], past, j)
        diff = np.abs(logits - ref[j]).max() / np.abs(ref[j]).max()
        worst = max(worst, float(diff))
        same = int(np.argmax(logits)) == int(np.argmax(ref[j]))
        print(f"position {j}: max |onnx - numpy| / max |numpy| = {diff:.2e}, argmax same: {same}")
    print(json.dumps({"worst_relative_diff": worst}))
    sys.exit(0 if worst < 1e-2 else 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="the directory llm_convert.py wrote")
    ap.add_argument("--threads", type=int, default=0)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("generate")
    p.add_argument("--prompt", required=True)
    p.add_argument("-n", type=int, default=32)
    p = sub.add_parser("bench")
    p.add_argument("--prompt-tokens", type=int, default=1000)
    p.add_argument("-n", type=int, default=64)
    p.add_argument("--repeat", type=int, default=2)
    p = sub.add_parser("perplexity")
    p.add_argument("--text-file", required=True)
    p = sub.add_parser("check-tokenizer")
    p.add_argument("--gguf", required=True)
    p = sub.add_parser("check-numpy")
    p.add_argument("--gguf", required=True)
    p.add_argument("--prompt", default="The capital of France is Paris, and the capital of")
    args = ap.parse_args()
    {
        "generate": cmd_generate,
        "bench": cmd_bench,
        "perplexity": cmd_perplexity,
        "check-tokenizer": cmd_check_tokenizer,
        "check-numpy": cmd_check_numpy,
    }[args.cmd](args)


if __name__ == "__main__":
    main()
