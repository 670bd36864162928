#pragma once
// The table behind `opchain ops`: every op with, per vendor, the dtypes it registers. Gaps show as "-". A vendor
// with a fallback (a plugin) shows what it resolves from the fallback as "cpu:f32,bf16" (Note
// [Vendor fallback]); --json adds each op's field list as the vendor ABI marshals it ("abi_fields").
#include <ostream>

#include <nlohmann/json.hpp>

#include "ops/registry.h"

namespace opchain::tools {

// One row per op of kOpTable: key, op_type, schema, tolerance, vendors (dtype lists), resolved
// (vendors with a fallback only), abi_fields and plugin_ok.
nlohmann::json op_table_json(const Registry& reg);

// The vendors, then op_table_json's rows as a text table, one column per vendor.
void print_op_table(const Registry& reg, const nlohmann::json& table, std::ostream& out);

}  // namespace opchain::tools
