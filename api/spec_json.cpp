// The wire's spec and findings JSON: format 1 of the stored documents, by name.
#include "spec_json.hpp"

#include "storage/documents.hpp"

namespace logitaudit::api {

expected<audit::audit_spec, std::vector<audit::spec_problem>> read_spec(std::string_view json) {
  return storage::read_spec_format1(json);
}

std::string spec_to_json(const audit::audit_spec& spec) { return storage::encode_spec_format1(spec); }

std::string findings_to_json(const audit::findings& f) { return storage::encode_findings_format1(f); }

}  // namespace logitaudit::api
