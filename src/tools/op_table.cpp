#include "tools/op_table.h"

#include <iomanip>
#include <map>
#include <string>

#include "vendors/plugin_loader.h"

namespace opchain::tools {

nlohmann::json op_table_json(const Registry& reg) {
  const auto vendors = reg.vendors();
  nlohmann::json j = nlohmann::json::array();
  for (const auto& info : kOpTable) {
    nlohmann::json row{
        {"key", info.key}, {"op_type", info.name}, {"schema", info.schema}, {"tolerance", info.tolerance}};
    nlohmann::json per_vendor = nlohmann::json::object();
    for (const auto& v : vendors) per_vendor[v] = nlohmann::json::array();
    for (const KernelEntry* e : reg.entries_for(info.type)) {
      per_vendor[e->vendor].push_back(dtype_name(e->dtype));
    }
    row["vendors"] = per_vendor;
    // Per vendor with a fallback: dtype -> the vendor each (key, dtype) resolves to.
    nlohmann::json resolved = nlohmann::json::object();
    for (const auto& v : vendors) {
      const VendorInfo* vi = reg.vendor_info(v);
      if (!vi || vi->fallback.empty()) continue;
      nlohmann::json r = nlohmann::json::object();
      for (int d = 0; d < kNumDTypes; ++d)
        if (const KernelEntry* e = reg.find_with_fallback(info.type, v, static_cast<DType>(d)))
          r[std::string(dtype_name(e->dtype))] = e->vendor;
      resolved[v] = r;
    }
    if (!resolved.empty()) row["resolved"] = resolved;
    nlohmann::json fields = nlohmann::json::array();
    for (const AbiField& f : abi_fields(info.type))
      fields.push_back({{"name", f.name},
                        {"role", role_name(f.role)},
                        {"kind", abi_kind_name(f.kind)},
                        {"optional", f.optional},
                        {"enum_values", f.enum_values}});
    row["abi_fields"] = fields;
    row["plugin_ok"] = abi_unmarshallable_field(info.type) == nullptr;
    j.push_back(row);
  }
  return j;
}

void print_op_table(const Registry& reg, const nlohmann::json& j, std::ostream& out) {
  const auto vendors = reg.vendors();
  for (const auto& v : vendors)
    if (const VendorInfo* vi = reg.vendor_info(v))
      out << "vendor " << v << (vi->origin.empty() ? "" : " from " + vi->origin)
          << (vi->fallback.empty() ? "" : ", falls back to " + vi->fallback) << "\n";
  out << std::left << std::setw(26) << "key" << std::setw(24) << "OpType";
  for (const auto& v : vendors) out << std::setw(16) << v;
  out << "schema\n";
  for (const auto& row : j) {
    out << std::setw(26) << row["key"].get<std::string>() << std::setw(24) << row["op_type"].get<std::string>();
    for (const auto& v : vendors) {
      std::string dts;
      if (row.contains("resolved") && row["resolved"].contains(v)) {
        // "f32,bf16 cpu:f16": its own kernels, then what the fallback serves, by vendor.
        std::map<std::string, std::string> by_vendor;
        for (const auto& [dt, rv] : row["resolved"][v].items()) {
          auto& s = by_vendor[rv.get<std::string>()];
          s += (s.empty() ? "" : ",") + dt;
        }
        if (by_vendor.count(v)) dts = by_vendor[v];
        for (const auto& [rv, s] : by_vendor)
          if (rv != v) dts += (dts.empty() ? "" : " ") + rv + ":" + s;
      } else {
        for (const auto& d : row["vendors"][v]) dts += (dts.empty() ? "" : ",") + d.get<std::string>();
      }
      out << std::setw(16) << (dts.empty() ? "-" : dts) << (dts.size() >= 16 ? " " : "");
    }
    out << row["schema"].get<std::string>() << "\n";
  }
}

}  // namespace opchain::tools
