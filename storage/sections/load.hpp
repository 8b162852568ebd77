// A load level's measurement as stored (groups.load_level) and inside the load curves.
#pragma once

#include "audit/load.hpp"
#include "codec/field_table.hpp"

namespace logitaudit::storage::sections {

const fields::object_table<audit::load_measurement>& load_measurement_table();

}  // namespace logitaudit::storage::sections
