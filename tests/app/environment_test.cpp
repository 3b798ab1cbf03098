// The environment every report and session records names the libraries' versions with or without
// a backend (the app's sessions record it without one): oneDNN's, the one the CPU backend reports,
// and CUDA's and cuDNN's where the build has CUDA (else says it has none).
#include <gtest/gtest.h>

#include <regex>

#include "app/session/environment.h"
#include "engine/backends/select.h"

namespace ms::session {
namespace {

TEST(SessionEnvironment, RecordsTheLibrariesVersionsWithoutABackend) {
  const std::map<std::string, std::string> env = environment_record();
  ASSERT_TRUE(env.count("onednn")) << "no oneDNN version";
  const std::regex dotted(R"(\d+\.\d+(\.\d+)?)");
  EXPECT_TRUE(std::regex_match(env.at("onednn"), dotted)) << env.at("onednn");
  const auto cpu = backends::create_cpu_backend(1);
  EXPECT_NE(cpu->description().find("oneDNN " + env.at("onednn") + ","), std::string::npos) << cpu->description();
  if (env.count("cuda")) {
    EXPECT_EQ(env.at("cuda"), "not built");
    EXPECT_FALSE(env.count("cuda_runtime") || env.count("cudnn"));
  } else {
    for (const char* key : {"cuda_runtime", "cudnn"}) {
      ASSERT_TRUE(env.count(key)) << key;
      EXPECT_TRUE(std::regex_match(env.at(key), dotted)) << key << " " << env.at(key);
    }
    ASSERT_TRUE(env.count("cuda_driver"));
    EXPECT_TRUE(env.at("cuda_driver") == "none" || std::regex_match(env.at("cuda_driver"), dotted))
        << env.at("cuda_driver");
  }
  EXPECT_FALSE(env.count("backend") || env.count("threads"));  // those come with a backend
  const std::map<std::string, std::string> with = environment_record(cpu.get());
  EXPECT_EQ(with.at("threads"), "1");
  EXPECT_EQ(with.at("onednn"), env.at("onednn"));
}

}  // namespace
}  // namespace ms::session
