// main() of every test binary: GoogleTest plus a check, after all tests, that no child
// process (a llama-server, a daemon) outlived its test.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

namespace {

std::vector<pid_t> live_children() {
  std::vector<pid_t> kids;
  DIR* d = ::opendir("/proc");
  if (!d) return kids;
  const pid_t me = ::getpid();
  while (dirent* e = ::readdir(d)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // Fields after the command (which may contain spaces) start after the last ')'.
    auto close = line.rfind(')');
    if (close == std::string::npos || close + 4 >= line.size()) continue;
    char state = line[close + 2];
    const pid_t ppid = std::atoi(line.c_str() + close + 4);
    if (ppid == me && state != 'Z') kids.push_back(pid);
  }
  ::closedir(d);
  return kids;
}

class no_leaked_children : public ::testing::Environment {
 public:
  void TearDown() override {
    auto kids = live_children();
    for (pid_t k : kids) {
      ::kill(k, SIGKILL);
      ::waitpid(k, nullptr, 0);
    }
    EXPECT_TRUE(kids.empty()) << kids.size() << " child process(es) outlived their tests (first pid "
                              << (kids.empty() ? 0 : kids[0]) << ")";
  }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new no_leaked_children);
  return RUN_ALL_TESTS();
}
