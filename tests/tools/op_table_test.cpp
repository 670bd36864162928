// tools/op_table.h as a library user calls it, without the CLI (tests/apps covers `opchain ops`).
#include "tools/op_table.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "vendors/builtin_vendors.h"

namespace opchain::tools {
namespace {

TEST(OpTable, OneRowPerOpInTableOrder) {
  const nlohmann::json table = op_table_json(builtin_registry());
  ASSERT_EQ(table.size(), kOpTable.size());
  for (size_t i = 0; i < kOpTable.size(); ++i) {
    EXPECT_EQ(table[i]["key"].get<std::string>(), kOpTable[i].key);
    EXPECT_TRUE(table[i]["vendors"].contains("reference")) << kOpTable[i].key;
  }
}

TEST(OpTable, PrintsOneLinePerOpUnderTheHeader) {
  const Registry& reg = builtin_registry();
  std::ostringstream out;
  print_op_table(reg, op_table_json(reg), out);
  const std::string text = out.str();
  EXPECT_NE(text.find("key"), std::string::npos);
  for (const auto& info : kOpTable) EXPECT_NE(text.find("\n" + std::string(info.key)), std::string::npos) << info.key;
}

}  // namespace
}  // namespace opchain::tools
