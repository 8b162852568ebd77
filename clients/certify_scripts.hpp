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

namespace logitaudit::clients {

// File name -> script ("counterexample-1.sh", ...), and a README.txt saying which is which.
std::map<std::string, std::string> counterexample_scripts(const audit::audit_plan& plan, const audit::certificate& c,
                                                          std::int64_t audit, int trials = 3);

}  // namespace logitaudit::clients
