// `opchain ops`: the op table with, per vendor, the dtypes it registers. Gaps show as "-".
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/opchain/commands.h"
#include "vendors/builtin_vendors.h"

namespace opchain::cli {

Runner add_ops_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "List every op: key, schema, OpType and the dtypes each vendor registers");
  auto json_out = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json_out, "print JSON");
  return [json_out] {
    const Registry& reg = builtin_registry();
    const auto vendors = reg.vendors();
    nlohmann::json j = nlohmann::json::array();
    for (const auto& info : kOpTable) {
      nlohmann::json row{{"key", info.key}, {"op_type", info.name}, {"schema", info.schema}, {"tolerance", info.tolerance}};
      nlohmann::json per_vendor = nlohmann::json::object();
      for (const auto& v : vendors) per_vendor[v] = nlohmann::json::array();
      for (const KernelEntry* e : reg.entries_for(info.type)) {
        per_vendor[e->vendor].push_back(dtype_name(e->dtype));
      }
      row["vendors"] = per_vendor;
      j.push_back(row);
    }
    if (*json_out) {
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    std::cout << std::left << std::setw(26) << "key" << std::setw(24) << "OpType";
    for (const auto& v : vendors) std::cout << std::setw(16) << v;
    std::cout << "schema\n";
    for (const auto& row : j) {
      std::cout << std::setw(26) << row["key"].get<std::string>() << std::setw(24) << row["op_type"].get<std::string>();
      for (const auto& v : vendors) {
        std::string dts;
        for (const auto& d : row["vendors"][v]) dts += (dts.empty() ? "" : ",") + d.get<std::string>();
        std::cout << std::setw(16) << (dts.empty() ? "-" : dts);
      }
      std::cout << row["schema"].get<std::string>() << "\n";
    }
    return 0;
  };
}

}  // namespace opchain::cli
