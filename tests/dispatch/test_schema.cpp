// Tests for floors/dispatch/schema.{h,cpp} and the op table (ops.h): schema
// parsing (types, optional, kwarg-only, defaults, overload names, returns),
// errors for malformed schemas, and that every op's parsed schema agrees with
// its row (name, kind, factory arguments, sample call).
//
// [SECTION] Parsing
// [SECTION] Malformed schemas
// [SECTION] The op table
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "floors/dispatch/dispatcher.h"

namespace descent {
namespace {

// [SECTION] Parsing -------------------------------------------------------------------

TEST(Schema, ParsesArgumentsTypesAndDefaults) {
  Schema s = parse_schema("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(s.name, "add");
  EXPECT_EQ(s.overload, "");
  EXPECT_EQ(s.full_name(), "add");
  ASSERT_EQ(s.args.size(), 3u);
  EXPECT_EQ(s.args[0].name, "self");
  EXPECT_EQ(s.args[0].type, ArgType::Tensor);
  EXPECT_FALSE(s.args[0].optional);
  EXPECT_FALSE(s.args[0].kwarg_only);
  EXPECT_FALSE(s.args[0].has_default);
  EXPECT_EQ(s.args[1].name, "other");
  EXPECT_EQ(s.args[2].name, "alpha");
  EXPECT_EQ(s.args[2].type, ArgType::Scalar);
  EXPECT_TRUE(s.args[2].kwarg_only);
  ASSERT_TRUE(s.args[2].has_default);
  EXPECT_EQ(s.args[2].default_value.tag(), IValue::Tag::Int);
  EXPECT_EQ(s.args[2].default_value.to_int(), 1);
  EXPECT_EQ(s.num_positional(), 2);
  ASSERT_EQ(s.returns.size(), 1u);
  EXPECT_EQ(s.returns[0].name, "");
  EXPECT_EQ(s.text, "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(s.ns, "");
  EXPECT_FALSE(s.is_mutable());
  EXPECT_FALSE(s.is_view());
}

// Note [Schema names and alias annotations]: namespace, overload, and the
// three names an op goes by.
TEST(Schema, ParsesNamespaceAndOverload) {
  Schema s = parse_schema(
      "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
      "ScalarType? dtype=None) -> Tensor");
  EXPECT_EQ(s.ns, "aten");
  EXPECT_EQ(s.name, "sum");
  EXPECT_EQ(s.overload, "dim_IntList");
  EXPECT_EQ(s.full_name(), "aten::sum.dim_IntList");
  EXPECT_EQ(s.qualified_name(), "aten::sum");
  ASSERT_EQ(s.args.size(), 4u);
  EXPECT_EQ(s.args[1].type, ArgType::IntList) << "int[1] is an int list";
  EXPECT_TRUE(s.args[1].optional);
  EXPECT_FALSE(s.args[1].has_default);
  EXPECT_EQ(s.args[1].type_str(), "int[]?");
  Schema plain = parse_schema("aten::relu(Tensor self) -> Tensor");
  EXPECT_EQ(plain.full_name(), "aten::relu");
  EXPECT_EQ(plain.qualified_name(), "aten::relu");
}

TEST(Schema, ParsesAliasAnnotations) {
  Schema v = parse_schema("aten::view(Tensor(a) self, int[] size) -> Tensor(a)");
  EXPECT_EQ(v.args[0].alias, "a");
  EXPECT_FALSE(v.args[0].is_write);
  EXPECT_EQ(v.args[1].alias, "");
  EXPECT_EQ(v.returns[0].alias, "a");
  EXPECT_FALSE(v.returns[0].is_write);
  EXPECT_TRUE(v.is_view());
  EXPECT_FALSE(v.is_mutable());
  Schema m = parse_schema("aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  EXPECT_EQ(m.name, "add_");
  EXPECT_EQ(m.overload, "Tensor");
  EXPECT_EQ(m.args[0].alias, "a");
  EXPECT_TRUE(m.args[0].is_write);
  EXPECT_FALSE(m.args[1].is_write);
  EXPECT_TRUE(m.returns[0].is_write);
  EXPECT_TRUE(m.is_mutable());
  EXPECT_FALSE(m.is_view());
  Schema w = parse_schema("f(Tensor(a -> *) t, Tensor(b!)? out=None) -> (Tensor(b!) x, Tensor y)");
  EXPECT_EQ(w.args[0].alias, "a");
  EXPECT_EQ(w.args[0].alias_after, "*");
  EXPECT_FALSE(w.args[0].is_write);
  EXPECT_EQ(w.args[1].alias, "b");
  EXPECT_TRUE(w.args[1].is_write && w.args[1].optional && w.args[1].has_default);
  ASSERT_EQ(w.returns.size(), 2u);
  EXPECT_EQ(w.returns[0].name, "x");
  EXPECT_EQ(w.returns[0].alias, "b");
  EXPECT_EQ(w.returns[1].name, "y");
  EXPECT_EQ(w.returns[1].alias, "");
}

TEST(Schema, ParsesEveryTypeAndOptional) {
  Schema s = parse_schema(
      "f(Tensor a, Tensor? b, Scalar c, int d, int[] e, int[]? g, bool h, float i, ScalarType j, ScalarType? k, "
      "Device l, Device? m) -> Tensor");
  const ArgType want[] = {ArgType::Tensor,     ArgType::Tensor,     ArgType::Scalar, ArgType::Int,
                          ArgType::IntList,    ArgType::IntList,    ArgType::Bool,   ArgType::Float,
                          ArgType::ScalarType, ArgType::ScalarType, ArgType::Device, ArgType::Device};
  const char* type_str[] = {"Tensor", "Tensor?", "Scalar",     "int",         "int[]",  "int[]?",
                            "bool",   "float",   "ScalarType", "ScalarType?", "Device", "Device?"};
  ASSERT_EQ(s.args.size(), 12u);
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(s.args[i].type, want[i]) << i;
    EXPECT_EQ(s.args[i].type_str(), type_str[i]) << i;
    EXPECT_EQ(s.args[i].optional, std::string(type_str[i]).back() == '?') << i;
  }
  EXPECT_EQ(s.num_positional(), 12);
}

// aten::index's Tensor?[]: a list of optional tensors, one IValue holding
// them; aten::cat's Tensor[] arrives the same way, any number of them.
TEST(Schema, ParsesATensorList) {
  Schema s = parse_schema("aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor");
  ASSERT_EQ(s.args.size(), 2u);
  EXPECT_EQ(s.args[1].type, ArgType::OptionalTensorList);
  EXPECT_EQ(s.args[1].type_str(), "Tensor?[]");
  EXPECT_FALSE(s.args[1].optional);
  Schema cat = parse_schema("aten::cat(Tensor[] tensors, int dim=0) -> Tensor");
  EXPECT_EQ(cat.args[0].type, ArgType::TensorList);
  EXPECT_EQ(cat.args[0].type_str(), "Tensor[]");
  OptionalTensorList many;
  for (int i = 0; i < 3 * kMaxDims; ++i) many.push_back(scalar_tensor(Scalar(int64_t{i})));
  EXPECT_EQ(IValue(many).to_tensor_list().size(), 3 * kMaxDims) << "a list is as long as it needs";
  OptionalTensorList l;
  l.push_back(Tensor());
  l.push_back(scalar_tensor(Scalar(int64_t{2})));
  IValue v(l), copy = v;
  ASSERT_TRUE(copy.is_tensor_list());
  EXPECT_EQ(copy.to_tensor_list().size(), 2);
  EXPECT_FALSE(copy.to_tensor_list()[0].defined());
  EXPECT_TRUE(copy.to_tensor_list()[1].is_same(v.to_tensor_list()[1]));
  EXPECT_STREQ(copy.tag_name(), "Tensor[]");
}

// The loss functions' reduction=Mean (and Sum): at::Reduction's values.
TEST(Schema, ReadsTheReductionNamesAsTheirValues) {
  Schema s = parse_schema("aten::mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor");
  EXPECT_EQ(s.args[2].default_value.to_int(), 1);
  EXPECT_EQ(parse_schema("f(Tensor x, int r=Sum) -> Tensor").args[1].default_value.to_int(), 2);
  EXPECT_THROW(parse_schema("f(Tensor x, float r=Mean) -> Tensor"), Error);
}

TEST(Schema, ParsesDefaultValuesOfEachKind) {
  Schema s = parse_schema(
      "f(Tensor x, int? a=None, bool b=False, bool c=True, int d=-3, float e=0.5, float g=1e-3, int h=0) -> Tensor");
  ASSERT_EQ(s.args.size(), 8u);
  EXPECT_TRUE(s.args[1].default_value.is_none());
  EXPECT_EQ(s.args[2].default_value.tag(), IValue::Tag::Bool);
  EXPECT_FALSE(s.args[2].default_value.to_bool());
  EXPECT_TRUE(s.args[3].default_value.to_bool());
  EXPECT_EQ(s.args[4].default_value.to_int(), -3);
  EXPECT_EQ(s.args[5].default_value.tag(), IValue::Tag::Double);
  EXPECT_DOUBLE_EQ(s.args[5].default_value.to_double(), 0.5);
  EXPECT_DOUBLE_EQ(s.args[6].default_value.to_double(), 1e-3);
  EXPECT_EQ(s.args[7].default_value.to_int(), 0);
  for (size_t i = 1; i < 8; ++i) EXPECT_TRUE(s.args[i].has_default) << i;
}

TEST(Schema, KwargOnlyMarkerAppliesToEverythingAfterIt) {
  Schema s = parse_schema("f(Tensor a, int b, *, int c=1, bool d=False) -> Tensor");
  EXPECT_FALSE(s.args[0].kwarg_only);
  EXPECT_FALSE(s.args[1].kwarg_only);
  EXPECT_TRUE(s.args[2].kwarg_only);
  EXPECT_TRUE(s.args[3].kwarg_only);
  EXPECT_EQ(s.num_positional(), 2);
  Schema only_kw = parse_schema("g(*, ScalarType? dtype=None) -> Tensor");
  ASSERT_EQ(only_kw.args.size(), 1u);
  EXPECT_TRUE(only_kw.args[0].kwarg_only);
  EXPECT_EQ(only_kw.num_positional(), 0);
  Schema none = parse_schema("h() -> Tensor");
  EXPECT_TRUE(none.args.empty());
}

TEST(Schema, OverloadNamesAndNamedReturns) {
  Schema s = parse_schema("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  EXPECT_EQ(s.name, "max");
  EXPECT_EQ(s.overload, "dim");
  EXPECT_EQ(s.full_name(), "max.dim");
  ASSERT_EQ(s.returns.size(), 2u);
  EXPECT_EQ(s.returns[0].name, "values");
  EXPECT_EQ(s.returns[1].name, "indices");
  Schema one = parse_schema("f(Tensor a) -> (Tensor out)");
  ASSERT_EQ(one.returns.size(), 1u);
  EXPECT_EQ(one.returns[0].name, "out");
  // Spaces are optional around punctuation.
  Schema tight = parse_schema("g(Tensor a,*,int b=2)->Tensor");
  ASSERT_EQ(tight.args.size(), 2u);
  EXPECT_TRUE(tight.args[1].kwarg_only);
}

TEST(Schema, UnnamedTupleReturns) {
  Schema s = parse_schema("f(Tensor a) -> (Tensor, Tensor)");
  ASSERT_EQ(s.returns.size(), 2u);
  EXPECT_EQ(s.returns[0].name, "");
  EXPECT_EQ(s.returns[1].name, "");
}

// [SECTION] Malformed schemas -----------------------------------------------------

// Parses `text`, expecting an Error whose message names the (0-based) column
// `column` where the parser stopped, after any spaces it skipped.
void expect_bad(const char* text, size_t column, const char* what) {
  try {
    parse_schema(text);
    ADD_FAILURE() << "no error for '" << text << "'";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("column " + std::to_string(column) + ":"), std::string::npos) << text << " -> " << m;
    EXPECT_NE(m.find(what), std::string::npos) << text << " -> " << m;
    EXPECT_NE(m.find(text), std::string::npos) << "the message should quote the schema: " << m;
  }
}

TEST(Schema, MalformedSchemasNameTheColumn) {
  expect_bad("f(Tensr a) -> Tensor", 2, "expected a type");
  expect_bad("f(Tensor a", 10, "expected ','");
  expect_bad("f(Tensor a) Tensor", 12, "expected '->'");
  expect_bad("f(Tensor a) -> Tensor extra", 22, "unexpected text");
  expect_bad("f(Tensor a) -> (Tensor, int)", 24, "expected 'Tensor'");  // an int (a Work's handle) only alone
  expect_bad("f(Tensor a=None) -> Tensor", 15, "not optional");
  expect_bad("f(int a=abc) -> Tensor", 11, "cannot read default value 'abc'");
  expect_bad("f(Tensor a,) -> Tensor", 11, "expected a type");
  expect_bad("f(Tensor) -> Tensor", 8, "expected a name");
  expect_bad("(Tensor a) -> Tensor", 0, "expected a name");
  // Found by tests/fuzz (fuzz_schema): a name that is only an overload, or an overload left empty.
  expect_bad("aten::.nde(Tensor a) -> Tensor", 6, "expected the op's name before its overload");
  expect_bad(".x(Tensor a) -> Tensor", 0, "expected the op's name");
  expect_bad("aten::add.(Tensor a) -> Tensor", 6, "expected an overload name after '.'");
  expect_bad("f Tensor a) -> Tensor", 2, "expected '('");
  expect_bad("f(Tensor a) -> (Tensor x", 24, "expected ')'");
  expect_bad("f(Tensor a Tensor b) -> Tensor", 11, "expected ','");
  expect_bad("f(Tensor(!) a) -> Tensor", 9, "expected an alias set name");
  expect_bad("f(Tensor(a -> b) x) -> Tensor", 14, "expected '*'");
  expect_bad("f(Tensor(a x) -> Tensor", 11, "expected ')'");
}

// [SECTION] The op table ------------------------------------------------------------

TEST(OpTable, EveryOpHasAParsedSchemaWithItsName) {
  std::set<std::string> names;
  for (int i = 0; i < kNumOps; ++i) {
    const OpEntry& e = all_ops()[i];
    EXPECT_EQ(int(e.id), i) << e.name;
    EXPECT_EQ(&op_entry(e.id), &e);
    ASSERT_NE(e.name, nullptr);
    EXPECT_EQ(std::string(e.name), e.schema.full_name());
    EXPECT_EQ(parse_schema(e.schema.text).full_name(), e.name) << "the stored text parses to the same name";
    EXPECT_TRUE(e.schema.text.rfind(std::string(e.name) + "(", 0) == 0) << e.schema.text;
    EXPECT_FALSE(e.schema.returns.empty()) << e.name;
    // aten's, but for c10d's collectives (Note [Collectives are c10d ops]).
    EXPECT_EQ(e.schema.ns, e.kind == OpKind::Collective ? "c10d" : "aten") << e.name;
    EXPECT_EQ(std::string(e.profiler_name), e.schema.qualified_name());
    EXPECT_EQ(std::string(e.python_name), e.schema.name);
    // In-place rows write into self and return it; views return an alias of self.
    EXPECT_EQ(e.kind == OpKind::InPlace, e.schema.is_mutable()) << e.name;
    if (e.kind == OpKind::InPlace) {
      EXPECT_TRUE(e.schema.args[0].is_write && e.schema.returns[0].is_write) << e.name;
      EXPECT_EQ(e.schema.name.back(), '_') << e.name << ": PyTorch names in-place ops with a trailing _";
    }
    if (e.kind == OpKind::View) {  // but _unsafe_view, a view aten's schema does not declare as one
      EXPECT_EQ(e.schema.is_view(), e.id != Op::_unsafe_view) << e.name;
    }
    EXPECT_TRUE(names.insert(e.name).second) << "duplicate op name " << e.name;
    EXPECT_EQ(find_op(e.name), &e) << e.name;
    ASSERT_NE(e.sample, nullptr) << e.name;
  }
  EXPECT_EQ(names.size(), size_t(kNumOps));
  EXPECT_EQ(find_op("no_such_op"), nullptr);
  EXPECT_EQ(find_op("max"), nullptr) << "operator names carry their namespace";
  EXPECT_EQ(find_op("aten::max")->id, Op::max);
  EXPECT_EQ(find_op("aten::max.dim")->id, Op::max_dim);
  EXPECT_EQ(find_op("aten::add.Tensor")->id, Op::add);
  EXPECT_EQ(find_op("aten::add_.Tensor")->id, Op::add_);
  EXPECT_EQ(find_op("aten::arange.start_step")->id, Op::arange_start_step);
  EXPECT_STREQ(op_entry(Op::add).profiler_name, "aten::add");
  EXPECT_STREQ(op_entry(Op::sum_dim).profiler_name, "aten::sum");
  EXPECT_STREQ(op_entry(Op::max_dim).python_name, "max");
  EXPECT_EQ(op_entry(Op::max_dim).schema.returns.size(), 2u);
}

TEST(OpTable, FactoriesEndWithDtypeAndDevice) {
  int factories = 0;
  for (const OpEntry& e : all_ops()) {
    if (e.kind != OpKind::Factory) continue;
    ++factories;
    const auto& args = e.schema.args;
    ASSERT_GE(args.size(), 2u) << e.name;
    const SchemaArg& dtype = args[args.size() - 2];
    const SchemaArg& device = args[args.size() - 1];
    EXPECT_EQ(dtype.name, "dtype") << e.name;
    EXPECT_EQ(dtype.type_str(), "ScalarType?") << e.name;
    EXPECT_TRUE(dtype.kwarg_only && dtype.has_default && dtype.default_value.is_none()) << e.name;
    EXPECT_EQ(device.name, "device") << e.name;
    EXPECT_EQ(device.type_str(), "Device?") << e.name;
    EXPECT_TRUE(device.kwarg_only && device.has_default && device.default_value.is_none()) << e.name;
    // A factory like a tensor (ones_like, new_zeros: Note [Factories like a tensor]) takes that tensor first.
    const bool like = args[0].type == ArgType::Tensor && args[0].name == "self";
    for (size_t k = like ? 1 : 0; k < args.size(); ++k)
      EXPECT_NE(args[k].type, ArgType::Tensor) << e.name << " takes no tensor";
  }
  EXPECT_EQ(factories, 27) << "ten, eye (two), randint (two), randperm, and twelve like a tensor";
}

// aten generates a BackendSelect kernel for every op with TensorOptions that
// is not a _like op; in descent's table, every row that takes a device and
// is not a composite declares it, and its schema ends with the device.
TEST(OpTable, EveryOpWithADeviceArgumentSelectsItsBackend) {
  int selecting = 0;
  for (const OpEntry& e : all_ops()) {
    bool takes_device = false;
    for (const SchemaArg& a : e.schema.args) takes_device |= a.name == "device";
    const std::string_view dispatch = e.dispatch;
    const bool composite = dispatch == "CompositeImplicitAutograd";
    const bool declared = dispatch.starts_with("BackendSelect");
    EXPECT_EQ(declared, takes_device && !composite) << e.name;
    EXPECT_EQ(e.kernel(DispatchKey::BackendSelect) != nullptr, declared) << e.name;
    if (declared) {
      ++selecting;
      EXPECT_EQ(e.schema.args.back().name, "device") << e.name;
    }
  }
  EXPECT_EQ(selecting, 16) << "ten factories, _to_copy, eye (two), randint (two) and randperm";
}

TEST(OpTable, NonFactoriesTakeATensorFirstAndFallThroughBackendSelect) {
  for (const OpEntry& e : all_ops()) {
    bool factory = e.kind == OpKind::Factory;
    // A composite's one kernel sits at every Dense and Autograd key (Note [Composite ops decompose]).
    // (eye and randint select a backend, then run their composite there.)
    bool composite = std::string_view(e.dispatch).find("CompositeImplicitAutograd") != std::string_view::npos;
    const bool selects = std::string_view(e.dispatch).starts_with("BackendSelect");
    EXPECT_EQ(e.is_fallthrough(DispatchKey::BackendSelect), !selects) << e.name;
    // Only the factories fall through autograd; a comparison has no derivative
    // but an Autograd kernel that records nothing, as PyTorch's (Note [One
    // derivative per op], floors/autograd/derivatives.cpp).
    for (DispatchKey k : {DispatchKey::AutogradCPU, DispatchKey::AutogradCUDA, DispatchKey::AutogradSim}) {
      EXPECT_EQ(e.is_fallthrough(k), factory && !composite)
          << e.name << ": only the factories fall through " << dispatch_key_name(k);
      if (composite) {
        EXPECT_EQ(e.kernel(k), e.kernel(DispatchKey::CPU)) << e.name;
      }
    }
    // ADInplaceOrView runs for in-place and view ops, not composites (Note [ADInplaceOrView]).
    const bool bookkeeping = !composite && (e.schema.is_mutable() || e.schema.is_view());
    EXPECT_EQ(e.is_fallthrough(DispatchKey::ADInplaceOrView), !bookkeeping) << e.name;
    EXPECT_EQ(e.kernel(DispatchKey::BackendSelect) != nullptr, selects) << e.name;
    EXPECT_NE(e.kernel(DispatchKey::CPU), nullptr) << e.name << " has no CPU kernel";
    // The devices' kernels are there where the row declares them (the CUDA ones in a build with CUDA).
    const std::string_view dispatch = e.dispatch;
    EXPECT_EQ(e.kernel(DispatchKey::Sim) != nullptr, composite || dispatch.find("Sim") != std::string_view::npos)
        << e.name;
#ifdef DESCENT_HAVE_CUDA
    EXPECT_EQ(e.kernel(DispatchKey::CUDA) != nullptr, composite || dispatch.find("CUDA") != std::string_view::npos)
        << e.name;
#endif
    if (!factory) {  // `Tensor self`, but where aten names it otherwise: cat's `Tensor[] tensors`, linear's `input`,
                     // threshold_backward's `grad_output`, and pow.Scalar's `Scalar self` (2 ** x), whose tensor
                     // is its second argument
      ASSERT_FALSE(e.schema.args.empty()) << e.name;
      const SchemaArg& first = e.schema.args[0];
      if (e.id == Op::pow_scalar_base) {
        EXPECT_EQ(first.type, ArgType::Scalar) << e.name;
        EXPECT_EQ(e.schema.args[1].type, ArgType::Tensor) << e.name;
      } else if (e.id == Op::cat || e.id == Op::stack || e.id == Op::c10d_allreduce_ || e.id == Op::c10d_broadcast_) {
        EXPECT_EQ(first.type, ArgType::TensorList) << e.name;
        EXPECT_EQ(first.name, "tensors") << e.name;
      } else if (e.id == Op::c10d_allgather_ || e.id == Op::c10d_reduce_scatter_) {
        EXPECT_EQ(first.type, ArgType::TensorList) << e.name;
        EXPECT_EQ(first.name, "output_tensors") << e.name;
      } else {
        // aten's names where the first tensor is not `self` (native_functions.yaml).
        static const std::map<std::string_view, std::string_view> kFirst = {
            {"aten::linear", "input"},
            {"aten::threshold_backward", "grad_output"},
            {"aten::gelu_backward", "grad_output"},
            {"aten::silu_backward", "grad_output"},
            {"aten::_softmax_backward_data", "grad_output"},
            {"aten::_log_softmax_backward_data", "grad_output"},
            {"aten::native_layer_norm", "input"},
            {"aten::layer_norm", "input"},
            {"aten::dropout", "input"},
            {"aten::conv2d", "input"},
            {"aten::embedding", "weight"},
            {"aten::where", "condition"},
            {"c10d::barrier", "tensor"},
        };
        const auto named = kFirst.find(e.schema.qualified_name());
        EXPECT_EQ(first.type, ArgType::Tensor) << e.name;
        EXPECT_EQ(first.name, named != kFirst.end() ? named->second : "self") << e.name;
      }
    }
    // Every argument after the first with a default also has one (defaults are filled from the end).
    bool seen_default = false;
    for (const SchemaArg& a : e.schema.args) {
      if (seen_default) {
        EXPECT_TRUE(a.has_default) << e.name << "." << a.name;
      }
      seen_default = seen_default || a.has_default;
    }
  }
}

}  // namespace
}  // namespace descent
