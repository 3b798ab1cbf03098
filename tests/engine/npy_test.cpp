#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/frontend/npy.h"

namespace ms {
namespace {

namespace fs = std::filesystem;

class Npy : public ::testing::Test {
 public:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ms_npy_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write_raw(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  std::string read_raw(const std::string& name) const {
    std::ifstream in(path(name), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  fs::path dir_;
};

// A v1 file the way numpy writes it.
std::string npy_v1(const std::string& dict, const std::string& data) {
  std::string header = dict;
  const size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

template <class T>
void expect_round_trip(const Npy& fx, const std::string& name, const std::vector<T>& values, Shape shape) {
  SCOPED_TRACE(name);
  // (from_vector memcpys from values.data(), null for an empty vector: build empties directly)
  Tensor t = values.empty() ? Tensor::empty(dtype_of<T>(), shape) : Tensor::from_vector<T>(values, shape);
  ASSERT_TRUE(save_npy(t, fx.path(name)).is_ok());
  auto back = load_npy(fx.path(name));
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->dtype(), t.dtype());
  EXPECT_EQ(back->shape(), shape);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_TRUE(back->data<T>()[i] == values[i]) << i;
}

TEST_F(Npy, RoundTripsEveryDtype) {
  expect_round_trip<float>(*this, "f32.npy", {1.5f, -2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  expect_round_trip<double>(*this, "f64.npy", {1e300, -0.5}, {2});
  expect_round_trip<f16>(*this, "f16.npy", {f16(1.5f), f16(-65504.f)}, {2, 1});
  expect_round_trip<bf16>(*this, "bf16.npy", {bf16(1.5f), bf16(-3.f)}, {2});
  expect_round_trip<int8_t>(*this, "i8.npy", {-128, 127}, {2});
  expect_round_trip<int16_t>(*this, "i16.npy", {-32768, 5}, {2});
  expect_round_trip<int32_t>(*this, "i32.npy", {-7, 1 << 30}, {1, 2});
  expect_round_trip<int64_t>(*this, "i64.npy", {-(int64_t{1} << 40), 3}, {2});
  expect_round_trip<uint8_t>(*this, "u8.npy", {0, 255}, {2});
  expect_round_trip<uint16_t>(*this, "u16.npy", {65535}, {1});
  expect_round_trip<uint32_t>(*this, "u32.npy", {4000000000u}, {1});
  expect_round_trip<uint64_t>(*this, "u64.npy", {~uint64_t{0}}, {1});
  expect_round_trip<bool>(*this, "b1.npy", {true, false, true}, {3});
  expect_round_trip<float>(*this, "scalar.npy", {42.f}, {});
  expect_round_trip<float>(*this, "empty.npy", {}, {0, 3});
}

TEST_F(Npy, WritesNumpyCompatibleHeader) {
  ASSERT_TRUE(save_npy(Tensor::zeros(DType::F32, {3}), path("a.npy")).is_ok());
  const std::string bytes = read_raw("a.npy");
  ASSERT_GE(bytes.size(), 64u + 12u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_NE(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"), std::string::npos);
  EXPECT_EQ(bytes[10 + header_len - 1], '\n');
  ASSERT_TRUE(save_npy(Tensor::zeros(DType::Bool, {2, 2}), path("b.npy")).is_ok());
  EXPECT_NE(read_raw("b.npy").find("'descr': '|b1'"), std::string::npos);
  ASSERT_TRUE(save_npy(Tensor::zeros(DType::I64, {}), path("c.npy")).is_ok());
  EXPECT_NE(read_raw("c.npy").find("'shape': ()"), std::string::npos);
}

TEST_F(Npy, ReadsNumpyWrittenFiles) {
  const float vals[2] = {1.f, -1.f};
  auto t = load_npy(write_raw("np.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }",
                                               std::string(reinterpret_cast<const char*>(vals), 8))));
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(t->shape(), (Shape{1, 2}));
  EXPECT_EQ(t->data<float>()[1], -1.f);
  // Key order and quoting vary between writers; '=' is native (little-endian here).
  auto u = load_npy(write_raw(
      "np2.npy", npy_v1("{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"=i8\"}", std::string(16, '\0'))));
  ASSERT_TRUE(u.has_value()) << u.status().message();
  EXPECT_EQ(u->dtype(), DType::I64);
  // Fortran order is harmless for 1-D arrays.
  auto f = load_npy(write_raw("f1.npy", npy_v1("{'descr': '|u1', 'fortran_order': True, 'shape': (3,), }", "abc")));
  ASSERT_TRUE(f.has_value()) << f.status().message();
  EXPECT_EQ(f->data<uint8_t>()[2], 'c');
  // Bytes other than 0/1 in a bool array read as true.
  auto b = load_npy(write_raw(
      "b.npy", npy_v1("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x00\x07", 2))));
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->data<bool>()[0]);
  EXPECT_TRUE(b->data<bool>()[1]);
}

TEST_F(Npy, ReadsVersion2) {
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }";
  header.append(128 - 12 - header.size() - 1, ' ');
  header += '\n';
  std::string bytes("\x93NUMPY\x02\x00", 8);
  bytes += static_cast<char>(header.size());
  bytes += std::string(3, '\0');
  bytes += header + std::string("\x05\x00\x00\x00", 4);
  auto t = load_npy(write_raw("v2.npy", bytes));
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(t->data<int32_t>()[0], 5);
}

void expect_error(const Expected<Tensor>& t, const std::string& needle) {
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.status().message().find(needle), std::string::npos) << t.status().message();
}

TEST_F(Npy, RefusesBadFiles) {
  const std::string d = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  expect_error(load_npy(path("missing.npy")), "cannot open");
  expect_error(load_npy(write_raw("empty.npy", "")), "bad magic");
  expect_error(load_npy(write_raw("magic.npy", "PK\x03\x04 not numpy at all")), "bad magic");
  expect_error(load_npy(write_raw("trunc.npy", npy_v1(d, std::string(15, '\0')))), "truncated");
  expect_error(load_npy(write_raw("extra.npy", npy_v1(d, std::string(17, '\0')))), "bytes after the array data");
  expect_error(load_npy(write_raw("hdr.npy", npy_v1(d, "").substr(0, 30))), "header is truncated");
  expect_error(load_npy(write_raw("fortran.npy", npy_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                                                        std::string(16, '\0')))),
               "Fortran order");
  expect_error(load_npy(write_raw("be.npy", npy_v1("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                                                   std::string(4, '\0')))),
               "big-endian");
  expect_error(load_npy(write_raw("c8.npy", npy_v1("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                                                   std::string(8, '\0')))),
               "not a supported element type");
  expect_error(
      load_npy(write_raw("obj.npy", npy_v1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                                           std::string(4, '\0')))),
      "not a simple type string");
  expect_error(load_npy(write_raw("neg.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", ""))),
               "negative");
  expect_error(load_npy(write_raw("huge.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, "
                                                     "'shape': (99999999999, 99999999999), }",
                                                     ""))),
               "2^40");
  expect_error(load_npy(write_raw("noshape.npy", npy_v1("{'descr': '<f4', 'fortran_order': False}", ""))),
               "no 'shape'");
  expect_error(load_npy(write_raw("v9.npy", std::string("\x93NUMPY\x09\x00\x00\x00", 10))), "version 9");
}

TEST_F(Npy, RefusesStringTensor) {
  Tensor t(Buffer::host(0), DType::String, {});
  EXPECT_FALSE(save_npy(t, path("s.npy")).is_ok());
}

}  // namespace
}  // namespace ms
