// `opchain ops`: its flag; the op table itself is tools/op_table.h.
#include <iostream>
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/flags.h"
#include "tools/op_table.h"
#include "vendors/builtin_vendors.h"

namespace opchain::cli {

Runner add_ops_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "List every op: key, schema, OpType and the dtypes each vendor registers");
  auto json_out = std::make_shared<bool>(false);
  add_json_flag(cmd, *json_out);
  return [json_out] {
    const Registry& reg = builtin_registry();
    const nlohmann::json j = tools::op_table_json(reg);
    if (*json_out) {
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    tools::print_op_table(reg, j, std::cout);
    return 0;
  };
}

}  // namespace opchain::cli
