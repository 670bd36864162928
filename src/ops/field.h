#pragma once
// Note [Op fields]
// Each op's Args struct lists its fields once, in a static constexpr fields(): a tuple of
// Field{"name", Role, &Args::member}, in the order of the op's schema in op_table.h (inputs, in-place
// operands, attributes and metadata in the order written, then the outputs after "->"). Everything
// that walks an op's arguments is generic code over that list (ops/op_fields.h): the trace strings,
// the tensors an observer snapshots (`opchain align`), and later the C ABI's marshalling. The list is
// checked against the schema string for every op (tests/ops/op_fields_test.cpp), so the schema that
// `opchain ops` prints is the arguments a kernel receives.
#include <cstdint>

namespace opchain {

enum class Role : uint8_t {
  In,     // read only: a tensor, a weight (or a set of them), quantisation parameters
  InOut,  // a tensor the kernel updates in place (`!` in the schema)
  Out,    // a tensor the kernel writes (after `->` in the schema)
  Attr,   // a scalar or enum attribute (eps, top_k, form, precision)
  Meta,   // the step metadata the op reads (AttnMetadata, MoeMetadata)
};

constexpr const char* role_name(Role r) {
  switch (r) {
    case Role::In:
      return "in";
    case Role::InOut:
      return "inout";
    case Role::Out:
      return "out";
    case Role::Attr:
      return "attr";
    case Role::Meta:
      return "meta";
  }
  return "?";
}

constexpr bool writes(Role r) { return r == Role::InOut || r == Role::Out; }

// One field of an op's Args: its schema name, its role and the member that holds it. A field added to
// an op after a vendor ABI minor release was published is held back from plugins (`marshalled` false):
// Field order is the ABI (include/opchain/vendor_abi.h), so a plugin built against that release keeps
// receiving the fields it was built for, and its kernels run at the op's tolerance whatever it says.
template <class Args, class M>
struct Field {
  using ArgsType = Args;
  using Type = M;
  const char* name;
  Role role;
  M Args::*member;
  bool marshalled = true;
  constexpr const M& get(const Args& a) const { return a.*member; }
};
template <class Args, class M>
Field(const char*, Role, M Args::*) -> Field<Args, M>;
template <class Args, class M>
Field(const char*, Role, M Args::*, bool) -> Field<Args, M>;

}  // namespace opchain

namespace opchain {
// The trace strings of a launch (ops/op_fields.h); declared here so that the header of a field's type
// can declare how it shows (describe_field) beside the type.
struct FieldText;
}  // namespace opchain
