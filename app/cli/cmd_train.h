// `compare MODEL --train` lives with `train` (cmd_train.cpp): the --train flag is added to the
// compare subcommand there, and compare_command hands over when it is set.
#pragma once

#include "app/cli/commands.h"

namespace ms::cli {

bool compare_train_requested();
int compare_train_command(const RunArgs& a);

}  // namespace ms::cli
