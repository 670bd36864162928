#include "ops/op_fields.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "ops/gated_delta_rule.h"

namespace opchain {

void FieldText::attr(std::string_view name, const std::string& value) {
  if (!metadata.empty()) metadata += ' ';
  metadata.append(name);
  metadata += '=';
  metadata += value;
}

void FieldText::tensor(std::string_view name, const std::string& desc) {
  if (!tensors.empty()) tensors += ' ';
  tensors.append(name);
  tensors += '=';
  tensors += desc;
}

void describe_field(FieldText& out, const char* name, const Tensor& t) {
  if (!t.is_null()) out.tensor(name, t.desc());
}
void describe_field(FieldText& out, const char* name, float v) { out.attr(name, std::to_string(v)); }
void describe_field(FieldText& out, const char* name, int64_t v) { out.attr(name, std::to_string(v)); }
void describe_field(FieldText& out, const char* name, bool v) { out.attr(name, std::to_string(v)); }
void describe_field(FieldText& out, const char* name, DeltaRuleForm f) { out.attr(name, delta_rule_form_name(f)); }

// Shown only where it is not the f32 default (Note [Matmul precision]).
void describe_field(FieldText& out, const char* name, MatmulPrecision p) {
  if (p != MatmulPrecision::F32) out.attr(name, std::string(matmul_precision_name(p)));
}

// Attention ops read the step's shape; the linear-attention ops also each sequence's state slot.
void describe_field(FieldText& out, const char*, const AttnMetadata* m) {
  if (!m) return;
  out.attr("is_decoding", std::to_string(m->is_decoding));
  out.attr("batch", std::to_string(m->batch_size));
  out.attr("max_q_seqlen", std::to_string(m->max_q_seqlen));
  out.attr("max_kv_seqlen", std::to_string(m->max_kv_seqlen));
  out.attr("block_size", std::to_string(m->block_size));
  if (m->state_slots.is_null()) return;
  std::string slots;
  const int64_t shown = std::min<int64_t>({m->batch_size, m->state_slots.numel(), 8});
  for (int64_t b = 0; b < shown; ++b) slots += (b ? "," : "") + std::to_string(m->state_slots.data<int32_t>()[b]);
  if (m->batch_size > shown) slots += ",...";
  out.attr("state_slots", "[" + slots + "]");
}

void describe_field(FieldText& out, const char*, const MoeMetadata* m) {
  if (!m) return;
  out.attr("comm", moe_comm_type_name(m->comm_type));
  out.attr("ep", std::to_string(m->ep_size));
  out.attr("pad", std::to_string(m->pad_size));
  out.attr("router_n_groups", std::to_string(m->router_n_groups));
  out.attr("masked_rows", std::to_string(m->pad_size));
}

void describe_field(FieldText& out, const char* name, const ExpertWeights* w) {
  if (!w || w->num_experts() == 0) return;
  out.tensor(name,
             std::to_string(w->num_experts()) + "x(gate,up " + w->gate[0].desc() + ", down " + w->down[0].desc() + ")");
}

void describe_field(FieldText& out, const char* name, const std::vector<Tensor>* w) {
  if (!w || w->empty()) return;
  out.tensor(name, std::to_string(w->size()) + "x" + (*w)[0].desc());
}

void describe_field(FieldText& out, const char* name, const QuantParams* q) {
  if (q) out.attr(name, quant_scheme_name(q->scheme));
}

void describe_field(FieldText& out, const char* name, const std::vector<std::shared_ptr<const QuantParams>>* q) {
  if (q && !q->empty() && (*q)[0]) out.attr(name, quant_scheme_name((*q)[0]->scheme));
}

namespace {

void visit_if_set(const TensorVisitor& fn, const char* name, const Tensor& t) {
  if (!t.is_null()) fn(name, t, false);
}

// Splits at the commas outside brackets: "f32 x[n,h], W w[e][i,h]" -> two parameters.
std::vector<std::string_view> split_params(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    const char c = i < s.size() ? s[i] : ',';
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      std::string_view p = s.substr(start, i - start);
      while (!p.empty() && p.front() == ' ') p.remove_prefix(1);
      while (!p.empty() && p.back() == ' ') p.remove_suffix(1);
      if (!p.empty()) out.push_back(p);
      start = i + 1;
    }
  }
  return out;
}

bool is_operand_type(std::string_view t) {
  return t == "f32" || t == "i32" || t == "u8" || t == "i8" || t == "W" || t == "C" || t == "Q";
}

// "f32! residual[n,h]" -> {residual, InOut}; `output` for the part after "->".
SchemaField parse_param(std::string_view p, bool output, std::string_view schema) {
  const size_t sp = p.find(' ');
  if (sp == std::string_view::npos)
    throw InvalidArgumentError("schema '" + std::string(schema) + "': no name in '" + std::string(p) + "'");
  std::string_view type = p.substr(0, sp);
  std::string_view rest = p.substr(sp + 1);
  size_t end = 0;
  while (end < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[end])) || rest[end] == '_')) ++end;
  if (end == 0) throw InvalidArgumentError("schema '" + std::string(schema) + "': no name in '" + std::string(p) + "'");
  SchemaField f{std::string(rest.substr(0, end)), Role::In};
  bool in_place = false;
  while (!type.empty() && (type.back() == '!' || type.back() == '?')) {
    (type.back() == '!' ? in_place : f.optional) = true;
    type.remove_suffix(1);
  }
  if (output)
    f.role = Role::Out;
  else if (is_operand_type(type))
    f.role = in_place ? Role::InOut : Role::In;
  else if (type.ends_with("Metadata"))
    f.role = Role::Meta;
  else
    f.role = Role::Attr;
  return f;
}

}  // namespace

void visit_meta_tensors(const AttnMetadata* m, const TensorVisitor& fn) {
  if (!m) return;
  visit_if_set(fn, "meta.q_seqlens", m->q_seqlens);
  visit_if_set(fn, "meta.kv_seqlens", m->kv_seqlens);
  visit_if_set(fn, "meta.q_start_loc", m->q_start_loc);
  visit_if_set(fn, "meta.block_tables", m->block_tables);
  visit_if_set(fn, "meta.slot_mapping", m->slot_mapping);
  visit_if_set(fn, "meta.state_slots", m->state_slots);
}

void visit_meta_tensors(const MoeMetadata* m, const TensorVisitor& fn) {
  if (m) visit_if_set(fn, "meta.x_active_mask", m->x_active_mask);
}

std::vector<SchemaField> parse_schema_fields(std::string_view schema) {
  const size_t open = schema.find('(');
  size_t close = std::string_view::npos;
  int depth = 0;
  for (size_t i = open; open != std::string_view::npos && i < schema.size(); ++i) {
    if (schema[i] == '(') ++depth;
    if (schema[i] == ')' && --depth == 0) {
      close = i;
      break;
    }
  }
  if (close == std::string_view::npos)
    throw InvalidArgumentError("schema '" + std::string(schema) + "': no parameter list");
  std::vector<SchemaField> out;
  for (std::string_view p : split_params(schema.substr(open + 1, close - open - 1)))
    out.push_back(parse_param(p, false, schema));
  std::string_view rest = schema.substr(close + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.empty()) return out;
  if (!rest.starts_with("->"))
    throw InvalidArgumentError("schema '" + std::string(schema) + "': expected '->' after the parameters");
  rest.remove_prefix(2);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.starts_with("(") && rest.ends_with(")")) rest = rest.substr(1, rest.size() - 2);
  for (std::string_view p : split_params(rest)) out.push_back(parse_param(p, true, schema));
  return out;
}

}  // namespace opchain
