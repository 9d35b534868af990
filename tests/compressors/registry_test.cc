#include "compressors/registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compressors/codes.h"
#include "compressors/compressor_spec.h"

namespace sparseps {
namespace {

const std::vector<std::string> kBuiltinNames = {
    "bf16",    "dense",   "fp16",    "natural",  "onebit",    "powersgd", "qsgd",
    "randomk", "sampled", "signsgd", "terngrad", "threshold", "topk", "topk_strict"};

bool mentions(const absl::Status& status, const std::string& what) {
  return std::string(status.message()).find(what) != std::string::npos;
}

TEST(Registry, EveryBuiltinNameMakesItsCompressor) {
  const CompressorRegistry& r = compressorRegistry();
  EXPECT_EQ(r.names(), kBuiltinNames);
  for (const std::string& name : r.names()) {
    auto c = r.make(name);
    ASSERT_TRUE(c.ok()) << name << ": " << c.status();
    EXPECT_EQ((*c)->name(), name);
    auto same = makeRegisteredCompressor(name);
    ASSERT_TRUE(same.ok()) << same.status();
    EXPECT_EQ((*same)->name(), name);
  }
  // A fresh registry filled by registerBuiltinCompressors holds the same.
  CompressorRegistry fresh;
  registerBuiltinCompressors(&fresh);
  EXPECT_EQ(fresh.names(), kBuiltinNames);
}

// A compressor that makes coded segments names their code's format in its entry, and
// the decoder finds that format by the code; every code has a compressor that makes it.
TEST(Registry, EachCoderNamesTheFormatOfItsCode) {
  const CompressorRegistry& r = compressorRegistry();
  std::vector<float> x(64 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  SelectContext ctx;
  ctx.rows = 64;
  std::set<Code> made;
  for (const std::string& name : r.names()) {
    SCOPED_TRACE(name);
    auto c = r.make(name);
    ASSERT_TRUE(c.ok()) << c.status();
    SegmentData s;
    (*c)->compress(x, 0.1, ctx, &s);
    const CodeFormat* format = r.info(name)->code;
    if (!s.coded()) {
      EXPECT_EQ(format, nullptr);
      continue;
    }
    made.insert(s.code);
    ASSERT_NE(format, nullptr);
    EXPECT_EQ(format->code, s.code);
    EXPECT_EQ(&codeFormat(s.code), format);
    EXPECT_TRUE(validateCoded(s, true).ok());
  }
  EXPECT_EQ(made, (std::set<Code>{Code::kSign, Code::kTernary, Code::kQsgd, Code::kNatural,
                                  Code::kF16, Code::kBf16, Code::kLowRank}));
}

TEST(Registry, UnknownNameListsTheKnownOnes) {
  auto bad = makeRegisteredCompressor("nope");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(mentions(bad.status(), "nope")) << bad.status();
  for (const std::string& name : kBuiltinNames) {
    EXPECT_TRUE(mentions(bad.status(), name)) << name << " missing from: " << bad.status();
  }
  auto bad_with_options = makeRegisteredCompressor("nope:levels=4");
  EXPECT_EQ(bad_with_options.status().code(), absl::StatusCode::kNotFound);
}

TEST(Registry, OptionsParseAndReachTheCompressor) {
  auto spec = parseCompressorSpec("qsgd:levels=4,bucket=128");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "qsgd");
  EXPECT_EQ(spec->options,
            (std::map<std::string, std::string>{{"levels", "4"}, {"bucket", "128"}}));
  auto plain = parseCompressorSpec("topk");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->name, "topk");
  EXPECT_TRUE(plain->options.empty());

  auto c = makeRegisteredCompressor("qsgd:levels=4,bucket=128");
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<float> x(300, 1.0f);
  SegmentData s;
  (*c)->compress(x, 0.1, {}, &s);
  EXPECT_EQ(s.code, Code::kQsgd);
  EXPECT_EQ(s.code_arg, 4u);
  EXPECT_EQ(s.params.size(), 3u);  // ceil(300 / 128) buckets

  for (const char* good : {"powersgd:rank=2,warm_start=false", "powersgd:warm_start=yes",
                           "threshold:value=0.5", "qsgd:bucket=0", "qsgd:levels=32767"}) {
    EXPECT_TRUE(makeRegisteredCompressor(good).ok())
        << good << ": " << makeRegisteredCompressor(good).status();
  }
}

TEST(Registry, BadOptionsFailNamingTheKey) {
  struct Bad {
    const char* spec;
    const char* named;  // what the message must name
  };
  for (Bad b :
       {Bad{"qsgd:levels=abc", "levels"}, Bad{"qsgd:levels=-1", "levels"},
        Bad{"qsgd:bucket=1.5", "bucket"}, Bad{"powersgd:warm_start=maybe", "warm_start"},
        Bad{"threshold:value=nan", "value"}, Bad{"threshold:value=x", "value"},
        Bad{"qsgd:foo=1", "foo"}, Bad{"topk:foo=1", "foo"}, Bad{"qsgd:levels=4,levels=8", "levels"},
        Bad{"qsgd:levels=0", "levels"}, Bad{"qsgd:levels=32768", "levels"},
        Bad{"powersgd:rank=0", "rank"}, Bad{"threshold:value=0", "value"},
        Bad{"threshold:value=-1", "value"}, Bad{"qsgd:levels", "levels"}, Bad{"qsgd:=4", "=4"}}) {
    auto made = makeRegisteredCompressor(b.spec);
    ASSERT_FALSE(made.ok()) << b.spec;
    EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument) << b.spec;
    EXPECT_TRUE(mentions(made.status(), b.named)) << b.spec << ": " << made.status();
  }
  // Repeated key: refused by the parser itself.
  auto twice = parseCompressorSpec("qsgd:levels=4,levels=8");
  ASSERT_FALSE(twice.ok());
  EXPECT_TRUE(mentions(twice.status(), "levels")) << twice.status();
  EXPECT_FALSE(parseCompressorSpec("").ok());
  EXPECT_FALSE(parseCompressorSpec(":levels=4").ok());
}

TEST(Registry, HelpMentionsEveryNameAndItsPaper) {
  const CompressorRegistry& r = compressorRegistry();
  const std::string help = r.help();
  for (const std::string& name : kBuiltinNames) {
    ASSERT_NE(r.info(name), nullptr) << name;
    const CompressorInfo& info = *r.info(name);
    EXPECT_EQ(info.name, name);
    EXPECT_NE(help.find(info.name + ": "), std::string::npos) << info.name;
    EXPECT_FALSE(info.rule.empty()) << info.name;
    EXPECT_FALSE(info.paper.empty()) << info.name;
    EXPECT_NE(help.find(info.paper), std::string::npos) << info.name << "'s paper";
    for (const CompressorOptionInfo& o : info.options) {
      EXPECT_NE(help.find(o.key + "=" + o.default_value), std::string::npos)
          << info.name << " option " << o.key;
    }
  }
  EXPECT_NE(help.find("Alistarh"), std::string::npos);
  EXPECT_NE(help.find("Vogels"), std::string::npos);
}

TEST(Registry, AddRejectsDuplicatesAndBadNames) {
  CompressorRegistry r;
  registerBuiltinCompressors(&r);
  EXPECT_EQ(r.info("nope"), nullptr);
  const CompressorInfo dense = *r.info("dense");
  EXPECT_EQ(r.add(*r.info("qsgd")).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(r.add(dense).code(), absl::StatusCode::kAlreadyExists);

  CompressorInfo mine = dense;
  mine.name = "mine";
  EXPECT_TRUE(r.add(mine).ok());
  EXPECT_EQ(r.add(mine).code(), absl::StatusCode::kAlreadyExists);
  auto made = r.make("mine");
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ((*made)->name(), "dense");
  EXPECT_FALSE(makeRegisteredCompressor("mine").ok());  // the process's registry is apart

  for (const char* bad_name : {"", "a:b", "a,b", "a=b"}) {
    CompressorInfo bad = dense;
    bad.name = bad_name;
    EXPECT_FALSE(r.add(bad).ok()) << "'" << bad_name << "'";
  }
  CompressorInfo no_factory = dense;
  no_factory.name = "nofactory";
  no_factory.factory = nullptr;
  EXPECT_FALSE(r.add(no_factory).ok());
}

}  // namespace
}  // namespace sparseps
