// The scripts of a certificate's counterexamples (docs/certify.md): curl and a POSIX shell,
// one per counterexample, rebuilt from the stored spec's plan, so a bundle read offline gives
// them too. A burst is the repro bundle's script (the target alone, then with its neighbours at
// once); a shared prefix, the probe cold, then the warm-up and the probe on slot 0. Each starts
// nothing, takes the server's URL and exits 1 when the target's numbers moved.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "audit/certify.hpp"
#include "audit/plan.hpp"
#include "repro.hpp"

namespace logitaudit::clients {

// The burst counterexamples of each family, by their index in the certificate (smallest first),
// as the cases the repro machinery shrinks (the target and its neighbours as the plan sent them).
std::map<std::string, std::vector<std::pair<std::size_t, audit::repro_case>>> burst_cases(const audit::audit_plan& plan,
                                                                                          const audit::certificate& c);

// File name -> script ("counterexample-1.sh", ...), and a README.txt saying which is which. A
// counterexample in `shrunk` (by its index) is scripted as its minimal case, when the reduction
// reproduced it.
std::map<std::string, std::string> counterexample_scripts(const audit::audit_plan& plan, const audit::certificate& c,
                                                          std::int64_t audit, int trials = 3,
                                                          const std::map<std::size_t, repro_result>& shrunk = {});

}  // namespace logitaudit::clients
