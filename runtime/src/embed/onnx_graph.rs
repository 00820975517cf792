//! One rewrite of an ONNX graph, done on the protobuf wire format (no ONNX library): an
//! embedding table stored as int8 rows with a scale per row (`Mul(Cast(q), scale)` feeding a
//! `Gather`) is gathered first and dequantised after, so a query dequantises its few rows
//! instead of the whole table. Every value computed is bit for bit what the original graph
//! computes (the cast and the multiplication are element by element; only which elements they
//! run on changes). all-MiniLM-L6-v2's int8 export stores its 30,522 × 384 word table so: without
//! graph optimisation (which folds it once, for ~150 ms per load) every query dequantised all
//! 11.7 million of its values, more than half of a CLI query's model time.
//!
//! Everything not rewritten is copied through byte for byte, in its original order.

use std::collections::HashMap;

/// ModelProto.graph.
const MODEL_GRAPH: u32 = 7;
/// GraphProto fields.
const GRAPH_NODE: u32 = 1;
const GRAPH_INITIALIZER: u32 = 5;
const GRAPH_OUTPUT: u32 = 12;
/// NodeProto fields.
const NODE_INPUT: u32 = 1;
const NODE_OUTPUT: u32 = 2;
const NODE_NAME: u32 = 3;
const NODE_OP_TYPE: u32 = 4;
const NODE_ATTRIBUTE: u32 = 5;
const NODE_DOMAIN: u32 = 7;
/// AttributeProto fields.
const ATTR_NAME: u32 = 1;
const ATTR_I: u32 = 3;
const ATTR_G: u32 = 6;
const ATTR_GRAPHS: u32 = 11;
/// TensorProto fields; ValueInfoProto.name.
const TENSOR_DIMS: u32 = 1;
const TENSOR_NAME: u32 = 8;
const VALUE_INFO_NAME: u32 = 1;

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// One field of a protobuf message: its number, wire type and value (for `LEN`, the payload;
/// for the others, the encoded value), and the whole field as it was encoded.
struct Field<'a> {
    number: u32,
    wire: u8,
    value: &'a [u8],
    raw: &'a [u8],
}

fn varint(bytes: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut out = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at).ok_or("truncated varint")?;
        *at += 1;
        out |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(out);
        }
    }
    Err("varint longer than 10 bytes".into())
}

fn fields(msg: &[u8]) -> Result<Vec<Field<'_>>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < msg.len() {
        let start = at;
        let key = varint(msg, &mut at)?;
        let number = u32::try_from(key >> 3).map_err(|_| "field number out of range")?;
        let wire = (key & 7) as u8;
        let value_start = at;
        let end = match wire {
            VARINT => {
                varint(msg, &mut at)?;
                at
            }
            FIXED64 => at + 8,
            FIXED32 => at + 4,
            LEN => {
                let len = usize::try_from(varint(msg, &mut at)?).map_err(|_| "length too large")?;
                let payload = at;
                at = payload.checked_add(len).ok_or("length too large")?;
                if at > msg.len() {
                    return Err("truncated field".into());
                }
                out.push(Field { number, wire, value: &msg[payload..at], raw: &msg[start..at] });
                continue;
            }
            other => return Err(format!("unsupported wire type {other}")),
        };
        if end > msg.len() {
            return Err("truncated field".into());
        }
        at = end;
        out.push(Field { number, wire, value: &msg[value_start..end], raw: &msg[start..end] });
    }
    Ok(out)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_len(out: &mut Vec<u8>, number: u32, payload: &[u8]) {
    put_varint(out, (u64::from(number) << 3) | u64::from(LEN));
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

fn text(value: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(value).map_err(|_| "a name is not UTF-8".to_string())
}

/// What the rewrite needs to know of a node.
struct Node<'a> {
    inputs: Vec<&'a str>,
    outputs: Vec<&'a str>,
    op_type: &'a str,
    domain: &'a str,
    /// The encoded attributes, as they were.
    attributes: Vec<&'a [u8]>,
    /// The node as it was encoded (the payload of the graph's `node` field).
    raw: &'a [u8],
}

fn node(msg: &[u8]) -> Result<Node<'_>, String> {
    let mut n = Node {
        inputs: vec![],
        outputs: vec![],
        op_type: "",
        domain: "",
        attributes: vec![],
        raw: msg,
    };
    for f in fields(msg)? {
        match (f.number, f.wire) {
            (NODE_INPUT, LEN) => n.inputs.push(text(f.value)?),
            (NODE_OUTPUT, LEN) => n.outputs.push(text(f.value)?),
            (NODE_OP_TYPE, LEN) => n.op_type = text(f.value)?,
            (NODE_DOMAIN, LEN) => n.domain = text(f.value)?,
            (NODE_ATTRIBUTE, LEN) => n.attributes.push(f.value),
            _ => {}
        }
    }
    Ok(n)
}

impl Node<'_> {
    fn is(&self, op: &str) -> bool {
        self.op_type == op && (self.domain.is_empty() || self.domain == "ai.onnx")
    }

    /// The integer attribute `name`, when set.
    fn int_attribute(&self, name: &str) -> Result<Option<i64>, String> {
        for attr in &self.attributes {
            let fs = fields(attr)?;
            if fs.iter().any(|f| f.number == ATTR_NAME && f.value == name.as_bytes()) {
                return match fs.iter().find(|f| f.number == ATTR_I && f.wire == VARINT) {
                    Some(f) => Ok(Some(varint(f.value, &mut 0)? as i64)),
                    None => Err(format!("attribute {name} is not an integer")),
                };
            }
        }
        Ok(None)
    }

    /// True when an attribute holds a subgraph (whose uses of values this rewrite does not see).
    fn has_subgraph(&self) -> Result<bool, String> {
        for attr in &self.attributes {
            if fields(attr)?.iter().any(|f| f.number == ATTR_G || f.number == ATTR_GRAPHS) {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

fn encode_node(
    name: &str,
    op_type: &str,
    inputs: &[&str],
    outputs: &[&str],
    attributes: &[&[u8]],
) -> Vec<u8> {
    let mut out = Vec::new();
    for i in inputs {
        put_len(&mut out, NODE_INPUT, i.as_bytes());
    }
    for o in outputs {
        put_len(&mut out, NODE_OUTPUT, o.as_bytes());
    }
    put_len(&mut out, NODE_NAME, name.as_bytes());
    put_len(&mut out, NODE_OP_TYPE, op_type.as_bytes());
    for a in attributes {
        put_len(&mut out, NODE_ATTRIBUTE, a);
    }
    out
}

/// The dimensions of an initializer (a TensorProto), packed or not.
fn dims(tensor: &[u8]) -> Result<Vec<i64>, String> {
    let mut out = Vec::new();
    for f in fields(tensor)? {
        match (f.number, f.wire) {
            (TENSOR_DIMS, VARINT) => out.push(varint(f.value, &mut 0)? as i64),
            (TENSOR_DIMS, LEN) => {
                let mut at = 0;
                while at < f.value.len() {
                    out.push(varint(f.value, &mut at)? as i64);
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Rewrites the graph of `model` (an encoded ONNX ModelProto): every `Gather` on axis 0 whose
/// table is `Mul(Cast(q), scale)`, with `q` a rank-2 initializer, `scale` an initializer of
/// one value per row (`[rows, 1]`) and the table and its cast used by nothing else, becomes
/// `Mul(Cast(Gather(q, ids)), Gather(scale, ids))`. Returns the new model and how many tables
/// were rewritten (0: the model unchanged). A graph with subgraphs is left as it is.
pub fn gather_before_dequantize(model: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let top = fields(model)?;
    let graph = top
        .iter()
        .find(|f| f.number == MODEL_GRAPH && f.wire == LEN)
        .ok_or("the model has no graph")?;
    let graph_fields = fields(graph.value)?;
    let mut nodes = Vec::new();
    let mut initializers: HashMap<&str, Vec<i64>> = HashMap::new();
    let mut graph_outputs = Vec::new();
    for f in &graph_fields {
        match (f.number, f.wire) {
            (GRAPH_NODE, LEN) => nodes.push(node(f.value)?),
            (GRAPH_INITIALIZER, LEN) => {
                let name = fields(f.value)?
                    .iter()
                    .find(|t| t.number == TENSOR_NAME && t.wire == LEN)
                    .map(|t| text(t.value))
                    .transpose()?
                    .unwrap_or_default();
                initializers.insert(name, dims(f.value)?);
            }
            (GRAPH_OUTPUT, LEN) => {
                if let Some(n) = fields(f.value)?.iter().find(|v| v.number == VALUE_INFO_NAME) {
                    graph_outputs.push(text(n.value)?);
                }
            }
            _ => {}
        }
    }
    for n in &nodes {
        if n.has_subgraph()? {
            return Ok((model.to_vec(), 0));
        }
    }
    let producer: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .flat_map(|(i, n)| n.outputs.iter().map(move |o| (*o, i)))
        .collect();
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for n in &nodes {
        for i in &n.inputs {
            *uses.entry(i).or_default() += 1;
        }
    }
    for o in &graph_outputs {
        *uses.entry(o).or_default() += 1;
    }
    // Gather index → (its replacement, the Cast and Mul it makes dead).
    let mut replaced: HashMap<usize, Vec<u8>> = HashMap::new();
    let mut dead = Vec::new();
    for (gi, g) in nodes.iter().enumerate() {
        if !g.is("Gather") || g.inputs.len() != 2 || g.outputs.len() != 1 {
            continue;
        }
        if g.int_attribute("axis")?.unwrap_or(0) != 0 {
            continue;
        }
        let (table, ids) = (g.inputs[0], g.inputs[1]);
        let Some(&mi) = producer.get(table) else { continue };
        let mul = &nodes[mi];
        if !mul.is("Mul") || mul.inputs.len() != 2 || mul.outputs.len() != 1 {
            continue;
        }
        let (cast_out, scale) = (mul.inputs[0], mul.inputs[1]);
        let Some(&ci) = producer.get(cast_out) else { continue };
        let cast = &nodes[ci];
        if !cast.is("Cast") || cast.inputs.len() != 1 || cast.outputs.len() != 1 {
            continue;
        }
        let q = cast.inputs[0];
        let (Some(q_dims), Some(s_dims)) = (initializers.get(q), initializers.get(scale)) else {
            continue;
        };
        if q_dims.len() != 2 || s_dims.as_slice() != [q_dims[0], 1] {
            continue;
        }
        if uses.get(table) != Some(&1) || uses.get(cast_out) != Some(&1) {
            continue;
        }
        let out = g.outputs[0];
        let (gq, gs, gf) =
            (format!("{out}_rows_q"), format!("{out}_rows_scale"), format!("{out}_rows"));
        let gather_attrs: Vec<&[u8]> = g.attributes.clone();
        let mut four = Vec::new();
        put_len(
            &mut four,
            GRAPH_NODE,
            &encode_node(&gq, "Gather", &[q, ids], &[&gq], &gather_attrs),
        );
        put_len(
            &mut four,
            GRAPH_NODE,
            &encode_node(&gs, "Gather", &[scale, ids], &[&gs], &gather_attrs),
        );
        put_len(&mut four, GRAPH_NODE, &encode_node(&gf, "Cast", &[&gq], &[&gf], &cast.attributes));
        put_len(&mut four, GRAPH_NODE, &encode_node(out, "Mul", &[&gf, &gs], &[out], &[]));
        replaced.insert(gi, four);
        dead.extend([mi, ci]);
    }
    if replaced.is_empty() {
        return Ok((model.to_vec(), 0));
    }
    let mut new_graph = Vec::with_capacity(graph.value.len());
    let mut index = 0;
    for f in &graph_fields {
        if f.number == GRAPH_NODE && f.wire == LEN {
            debug_assert_eq!(nodes[index].raw, f.value);
            if let Some(four) = replaced.get(&index) {
                new_graph.extend_from_slice(four);
            } else if !dead.contains(&index) {
                new_graph.extend_from_slice(f.raw);
            }
            index += 1;
        } else {
            new_graph.extend_from_slice(f.raw);
        }
    }
    let mut out = Vec::with_capacity(model.len());
    for f in &top {
        if std::ptr::eq(f.raw, graph.raw) {
            put_len(&mut out, MODEL_GRAPH, &new_graph);
        } else {
            out.extend_from_slice(f.raw);
        }
    }
    Ok((out, replaced.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(name: &str, dims: &[i64]) -> Vec<u8> {
        let mut t = Vec::new();
        for d in dims {
            put_varint(&mut t, u64::from(TENSOR_DIMS) << 3);
            put_varint(&mut t, *d as u64);
        }
        put_len(&mut t, TENSOR_NAME, name.as_bytes());
        t
    }

    fn int_attr(name: &str, v: i64) -> Vec<u8> {
        let mut a = Vec::new();
        put_len(&mut a, ATTR_NAME, name.as_bytes());
        put_varint(&mut a, u64::from(ATTR_I) << 3);
        put_varint(&mut a, v as u64);
        a
    }

    /// A model whose graph is `Gather(Mul(Cast(q), scale), ids)`, with `extra` nodes after it.
    fn model(scale_dims: &[i64], extra: &[Vec<u8>]) -> Vec<u8> {
        let to_float = int_attr("to", 1);
        let mut g = Vec::new();
        put_len(&mut g, GRAPH_NODE, &encode_node("c", "Cast", &["q"], &["qf"], &[&to_float]));
        put_len(&mut g, GRAPH_NODE, &encode_node("m", "Mul", &["qf", "s"], &["table"], &[]));
        put_len(&mut g, GRAPH_NODE, &encode_node("g", "Gather", &["table", "ids"], &["emb"], &[]));
        for e in extra {
            put_len(&mut g, GRAPH_NODE, e);
        }
        put_len(&mut g, GRAPH_INITIALIZER, &tensor("q", &[5, 3]));
        put_len(&mut g, GRAPH_INITIALIZER, &tensor("s", scale_dims));
        let mut out_info = Vec::new();
        put_len(&mut out_info, VALUE_INFO_NAME, b"emb");
        put_len(&mut g, GRAPH_OUTPUT, &out_info);
        let mut m = Vec::new();
        put_varint(&mut m, 1 << 3); // ir_version
        put_varint(&mut m, 8);
        put_len(&mut m, MODEL_GRAPH, &g);
        m
    }

    fn ops(model: &[u8]) -> Vec<(String, Vec<String>)> {
        let top = fields(model).unwrap();
        let graph = top.iter().find(|f| f.number == MODEL_GRAPH).unwrap();
        fields(graph.value)
            .unwrap()
            .iter()
            .filter(|f| f.number == GRAPH_NODE)
            .map(|f| {
                let n = node(f.value).unwrap();
                (n.op_type.to_string(), n.inputs.iter().map(|s| s.to_string()).collect())
            })
            .collect()
    }

    #[test]
    fn a_row_scaled_table_is_gathered_before_it_is_dequantised() {
        let (out, n) = gather_before_dequantize(&model(&[5, 1], &[])).unwrap();
        assert_eq!(n, 1);
        let ops = ops(&out);
        let names: Vec<&str> = ops.iter().map(|(op, _)| op.as_str()).collect();
        assert_eq!(names, ["Gather", "Gather", "Cast", "Mul"]);
        assert_eq!(ops[0].1, ["q", "ids"]);
        assert_eq!(ops[1].1, ["s", "ids"]);
        assert_eq!(ops[3].1, ["emb_rows", "emb_rows_scale"]);
        // The cast keeps its target type; the model's other fields are untouched.
        let top = fields(&out).unwrap();
        assert_eq!(top[0].raw, &[8, 8]);
        let graph = fields(top[1].value).unwrap();
        let cast = node(graph[2].value).unwrap();
        assert_eq!(cast.int_attribute("to").unwrap(), Some(1));
        assert!(graph.iter().filter(|f| f.number == GRAPH_INITIALIZER).count() == 2);
    }

    #[test]
    fn tables_it_cannot_prove_safe_are_left_alone() {
        // A scale per column: gathering rows of it would be wrong.
        let per_column = model(&[1, 3], &[]);
        assert_eq!(gather_before_dequantize(&per_column).unwrap(), (per_column.clone(), 0));
        // The dequantised table is used by another node too.
        let other_use = model(&[5, 1], &[encode_node("r", "ReduceSum", &["table"], &["t"], &[])]);
        assert_eq!(gather_before_dequantize(&other_use).unwrap(), (other_use.clone(), 0));
        // A gather along another axis.
        let axis = int_attr("axis", 1);
        let mut g = Vec::new();
        put_len(&mut g, GRAPH_NODE, &encode_node("c", "Cast", &["q"], &["qf"], &[]));
        put_len(&mut g, GRAPH_NODE, &encode_node("m", "Mul", &["qf", "s"], &["table"], &[]));
        put_len(&mut g, GRAPH_NODE, &encode_node("g", "Gather", &["table", "i"], &["e"], &[&axis]));
        put_len(&mut g, GRAPH_INITIALIZER, &tensor("q", &[5, 3]));
        put_len(&mut g, GRAPH_INITIALIZER, &tensor("s", &[5, 1]));
        let mut m = Vec::new();
        put_len(&mut m, MODEL_GRAPH, &g);
        assert_eq!(gather_before_dequantize(&m).unwrap().1, 0);
    }

    #[test]
    fn malformed_bytes_are_an_error_not_a_panic() {
        let good = model(&[5, 1], &[]);
        for cut in [1, 3, good.len() / 2, good.len() - 1] {
            assert!(gather_before_dequantize(&good[..cut]).is_err(), "cut at {cut}");
        }
        assert!(gather_before_dequantize(&[0xff; 12]).is_err());
        assert!(gather_before_dequantize(b"").unwrap_err().contains("no graph"));
    }
}
