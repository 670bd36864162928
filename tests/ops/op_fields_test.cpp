// Note [Op fields]: each op's Args declares its fields once; the schema string in the op table must
// name the same fields, in the same order, with the same roles, for every op. Then the generic code
// over the lists: trace strings and the tensors an observer sees.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "backends/visit_tensors.h"
#include "core/error.h"
#include "ops/op_fields.h"
#include "ops/op_table.h"

namespace opchain {
namespace {

struct DeclaredField {
  std::string name;
  Role role;
  bool role_fits_type;
};

template <class Args>
std::vector<DeclaredField> declared_fields() {
  std::vector<DeclaredField> out;
  for_each_field<Args>([&](const auto& f) {
    using M = typename std::decay_t<decltype(f)>::Type;
    out.push_back({f.name, f.role, role_fits_type<M>(f.role)});
  });
  return out;
}

std::string show(const std::vector<DeclaredField>& fs) {
  std::string s;
  for (const auto& f : fs) s += std::string(s.empty() ? "" : ", ") + role_name(f.role) + " " + f.name;
  return s;
}
std::string show(const std::vector<SchemaField>& fs) {
  std::string s;
  for (const auto& f : fs) s += std::string(s.empty() ? "" : ", ") + role_name(f.role) + " " + f.name;
  return s;
}

template <class Args>
void expect_schema_agrees(const OpInfo& info) {
  SCOPED_TRACE(std::string(info.key) + ": " + std::string(info.schema));
  const std::vector<DeclaredField> declared = declared_fields<Args>();
  const std::vector<SchemaField> schema = parse_schema_fields(info.schema);
  ASSERT_EQ(declared.size(), schema.size()) << "fields(): " << show(declared) << "\nschema:   " << show(schema);
  std::set<std::string> names;
  for (size_t i = 0; i < declared.size(); ++i) {
    EXPECT_EQ(declared[i].name, schema[i].name) << "field " << i;
    EXPECT_EQ(declared[i].role, schema[i].role) << declared[i].name << ": fields() says " << role_name(declared[i].role)
                                                << ", the schema " << role_name(schema[i].role);
    EXPECT_TRUE(declared[i].role_fits_type) << declared[i].name << " cannot be " << role_name(declared[i].role);
    EXPECT_TRUE(names.insert(declared[i].name).second) << "duplicate field " << declared[i].name;
  }
}

TEST(OpFields, EverySchemaNamesTheFieldsOfItsArgs) {
#define OPCHAIN_X(name, key, args, dispatch, schema, tol) expect_schema_agrees<args>(op_info(OpType::name));
  OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
}

// Every member of every Args is in its field list: the number of members (the most initialisers an
// aggregate takes) equals the list's length.
struct AnyMember {
  template <class T>
  operator T() const;  // NOLINT: converts to whatever the member is; only used in unevaluated context
};
template <class Args, class... A>
constexpr size_t member_count() {
  if constexpr (requires { Args{A{}..., AnyMember{}}; })
    return member_count<Args, A..., AnyMember>();
  else
    return sizeof...(A);
}
template <class Args>
void expect_every_member_listed(const OpInfo& info) {
  EXPECT_EQ(member_count<Args>(), std::tuple_size_v<decltype(Args::fields())>)
      << info.key << ": its Args has a member that fields() does not list (or lists one twice)";
}

TEST(OpFields, EveryMemberIsListed) {
#define OPCHAIN_X(name, key, args, dispatch, schema, tol) expect_every_member_listed<args>(op_info(OpType::name));
  OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
}

TEST(OpFields, TheSchemaParserReadsRolesAndRejectsNonsense) {
  const auto f = parse_schema_fields(
      "op(f32 x[n,h], f32!? residual[n,h], W experts[e](gate[i,h], up[i,h]), int k, MoeMetadata meta) -> (f32 a[n], "
      "i32 b[n])");
  ASSERT_EQ(f.size(), 7u);
  EXPECT_EQ(f[0].name, "x");
  EXPECT_EQ(f[0].role, Role::In);
  EXPECT_EQ(f[1].role, Role::InOut);
  EXPECT_TRUE(f[1].optional);
  EXPECT_EQ(f[2].name, "experts");
  EXPECT_EQ(f[3].role, Role::Attr);
  EXPECT_EQ(f[4].role, Role::Meta);
  EXPECT_EQ(f[5].role, Role::Out);
  EXPECT_EQ(f[6].name, "b");
  EXPECT_THROW(parse_schema_fields("op f32 x"), InvalidArgumentError);
  EXPECT_THROW(parse_schema_fields("op(f32 x) f32 y"), InvalidArgumentError);
}

TEST(OpFields, TraceStringsNameEveryTensorAndAttribute) {
  const Tensor x = Tensor::empty(DType::F32, {3, 8}), w = Tensor::empty(DType::BF16, {8}),
               out = Tensor::empty(DType::F32, {3, 8});
  std::string meta, tensors;
  describe_fields(RmsNormArgs{x, w, out, 1e-5f}, meta, tensors);
  EXPECT_EQ(meta, "eps=0.000010");
  EXPECT_EQ(tensors, "x=" + x.desc() + " weight=" + w.desc() + " out=" + out.desc());

  GatedDeltaRuleArgs g;
  g.qkv = x;
  g.num_k_heads = 2;
  g.form = DeltaRuleForm::Chunked;
  describe_fields(g, meta, tensors);
  EXPECT_NE(meta.find("num_k_heads=2"), std::string::npos) << meta;
  EXPECT_NE(meta.find("form=chunked"), std::string::npos) << meta;
  EXPECT_EQ(tensors, "qkv=" + x.desc());  // null tensors are left out

  LinearArgs l{x, w, Tensor(), out, MatmulPrecision::Bf16};
  describe_fields(l, meta, tensors);
  EXPECT_EQ(meta, "precision=bf16");
}

TEST(OpFields, VisitMarksWhatTheKernelWrites) {
  const Tensor x = Tensor::empty(DType::F32, {2, 4}), r = Tensor::empty(DType::F32, {2, 4}),
               w = Tensor::empty(DType::F32, {4}), out = Tensor::empty(DType::F32, {2, 4});
  AttnMetadata m;
  m.q_seqlens = Tensor::empty(DType::I32, {1});
  std::vector<std::pair<std::string, bool>> seen;
  const AddRmsNormArgs a{x, r, w, out, 1e-6f};
  visit_tensors(OpType::AddRmsNorm, &a,
                [&](const char* name, const Tensor&, bool is_output) { seen.emplace_back(name, is_output); });
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, bool>>{
                      {"x", false}, {"residual", true}, {"weight", false}, {"out", true}}));

  seen.clear();
  const FillKvCacheArgs f{x, x, r, r, &m};
  visit_tensors(OpType::FillKvCache, &f,
                [&](const char* name, const Tensor&, bool is_output) { seen.emplace_back(name, is_output); });
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, bool>>{
                      {"k", false}, {"v", false}, {"k_cache", true}, {"v_cache", true}, {"meta.q_seqlens", false}}));
}

}  // namespace
}  // namespace opchain
