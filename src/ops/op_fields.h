#pragma once
// Generic code over an op's field list (Note [Op fields] in ops/field.h): trace strings, the tensors
// an observer reads, and a parse of the schema strings for checking them against the lists. Nothing
// here names an op: a new op gets all of it by declaring fields() on its Args.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/quant.h"
#include "core/tensor.h"
#include "ops/expert_weights.h"
#include "ops/field.h"
#include "ops/matmul_precision.h"
#include "ops/step_metadata.h"

namespace opchain {

// Calls fn(field) for each entry of Args::fields(), in order.
template <class Args, class Fn>
constexpr void for_each_field(Fn&& fn) {
  std::apply([&](const auto&... f) { (fn(f), ...); }, Args::fields());
}

// The two trace strings of a launch: attributes and metadata ("eps=1e-06 is_decoding=1 ..."), and
// tensors ("x=f32[3,8] weight=bf16[8] ...").
struct FieldText {
  std::string metadata;
  std::string tensors;
  void attr(std::string_view name, const std::string& value);
  void tensor(std::string_view name, const std::string& desc);
};

// How each field type shows in a trace. A field of a new type needs one overload here (or beside
// the type, found by argument-dependent lookup); without it the op's Args do not compile.
void describe_field(FieldText& out, const char* name, const Tensor& t);
void describe_field(FieldText& out, const char* name, float v);
void describe_field(FieldText& out, const char* name, int64_t v);
void describe_field(FieldText& out, const char* name, bool v);
void describe_field(FieldText& out, const char* name, MatmulPrecision p);  // shown unless f32
void describe_field(FieldText& out, const char* name, const AttnMetadata* m);
void describe_field(FieldText& out, const char* name, const MoeMetadata* m);
void describe_field(FieldText& out, const char* name, const ExpertWeights* w);
void describe_field(FieldText& out, const char* name, const std::vector<Tensor>* w);
void describe_field(FieldText& out, const char* name, const QuantParams* q);
void describe_field(FieldText& out, const char* name, const std::vector<std::shared_ptr<const QuantParams>>* q);

template <class Args>
void describe_fields(const Args& a, std::string& metadata, std::string& tensors) {
  FieldText out;
  for_each_field<Args>([&](const auto& f) { describe_field(out, f.name, f.get(a)); });
  metadata = std::move(out.metadata);
  tensors = std::move(out.tensors);
}

// Every tensor of an op's arguments, non-null ones only; is_output marks what the kernel writes
// (Role::Out and Role::InOut). The tensors of the step metadata the op reads are inputs named
// "meta.<field>".
using TensorVisitor = std::function<void(const char* name, const Tensor& t, bool is_output)>;
void visit_meta_tensors(const AttnMetadata* m, const TensorVisitor& fn);
void visit_meta_tensors(const MoeMetadata* m, const TensorVisitor& fn);

template <class Args>
void visit_field_tensors(const Args& a, const TensorVisitor& fn) {
  for_each_field<Args>([&](const auto& f) {
    using M = typename std::decay_t<decltype(f)>::Type;
    if constexpr (std::is_same_v<M, Tensor>) {
      if (!f.get(a).is_null()) fn(f.name, f.get(a), writes(f.role));
    } else if constexpr (std::is_same_v<M, const AttnMetadata*> || std::is_same_v<M, const MoeMetadata*>) {
      visit_meta_tensors(f.get(a), fn);
    }
  });
}

// A field as the schema string names it: "f32! residual[n,h]" is {"residual", InOut}.
struct SchemaField {
  std::string name;
  Role role;
  bool optional = false;  // `?`: a null tensor is allowed
};
// Parses "op(params) -> outputs"; throws InvalidArgumentError on text it cannot read.
std::vector<SchemaField> parse_schema_fields(std::string_view schema);

// The role each field type may take: tensors and weights are operands, step metadata is Meta,
// scalars and enums are attributes. Checked for every op by the schema agreement test.
template <class M>
constexpr bool role_fits_type(Role r) {
  if constexpr (std::is_same_v<M, Tensor>)
    return r == Role::In || r == Role::InOut || r == Role::Out;
  else if constexpr (std::is_same_v<M, const AttnMetadata*> || std::is_same_v<M, const MoeMetadata*>)
    return r == Role::Meta;
  else if constexpr (std::is_pointer_v<M>)
    return r == Role::In;  // weights, quantisation parameters
  else
    return r == Role::Attr;
}

}  // namespace opchain
