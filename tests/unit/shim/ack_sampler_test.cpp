// The worker's ack sampling driven directly: a real loopback connection, a sample as the write
// path hands it over, and polls at chosen times.
#include "ack_sampler.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "fd_table.hpp"

namespace tcptune::shim {
namespace {

class AckSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ASSERT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(listener_, 1), 0);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    client_ = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(::connect(client_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    server_ = ::accept(listener_, nullptr, nullptr);
    ASSERT_GE(server_, 0);
    slot_ = fd_table().get(client_);
    ASSERT_NE(slot_, nullptr);
    slot_->kind.store(FdKind::tcp);  // as the socket hook classifies it
  }
  void TearDown() override {
    for (const int fd : {client_, server_, listener_}) {
      fd_table().retire(fd);
      ::close(fd);
    }
  }
  // A write of `bytes` that returned at write_end_ns, sampled as the write path would.
  AckSample write_and_sample(std::size_t bytes, std::int64_t write_end_ns) {
    const std::string data(bytes, 'x');
    EXPECT_EQ(::send(client_, data.data(), data.size(), 0), static_cast<ssize_t>(bytes));
    const std::uint64_t after = slot_->stats.counters.bytes.fetch_add(bytes) + bytes;
    slot_->stats.ack_sample_outstanding.store(true);
    return AckSample{client_, slot_->generation.load(), after, write_end_ns, false};
  }

  int listener_ = -1;
  int client_ = -1;
  int server_ = -1;
  SocketSlot* slot_ = nullptr;
};

TEST_F(AckSamplerTest, AckBeforeTheFirstPollIsCountedButNotTimed) {
  AckSampler sampler;
  sampler.add(write_and_sample(100, 1'000));
  usleep(20'000);  // loopback acknowledges within microseconds
  sampler.poll(5'000'000);
  EXPECT_FALSE(sampler.has_outstanding());
  EXPECT_FALSE(slot_->stats.ack_sample_outstanding.load()) << "the next write may be sampled";
  const telemetry::AckLatency acks = sampler.take(client_, slot_->generation.load());
  EXPECT_EQ(acks.acked_before_first_poll, 1U);
  EXPECT_EQ(acks.histogram.count(), 0U);
}

TEST_F(AckSamplerTest, AckSeenAfterAPollThatFoundItOutstandingIsTimed) {
  AckSampler sampler;
  AckSample sample = write_and_sample(100, 1'000'000);
  sample.seen_unacked = true;  // as if an earlier poll had found the byte unacknowledged
  sampler.add(sample);
  usleep(20'000);
  sampler.poll(4'000'000);
  const telemetry::AckLatency acks = sampler.take(client_, slot_->generation.load());
  ASSERT_EQ(acks.histogram.count(), 1U);
  EXPECT_EQ(acks.sum_ns, 3'000'000U);
  EXPECT_NEAR(acks.histogram.percentile_ns(50), 3e6, 0.06 * 3e6);
  EXPECT_EQ(sampler.take(client_, slot_->generation.load()).histogram.count(), 0U) << "taken once";
}

TEST_F(AckSamplerTest, UnacknowledgedBytesKeepTheSampleOutstanding) {
  AckSampler sampler;
  AckSample sample = write_and_sample(100, 0);
  sample.bytes_after += 1'000'000;  // bytes the peer cannot have acknowledged
  sampler.add(sample);
  sampler.poll(1'000'000);
  EXPECT_TRUE(sampler.has_outstanding());
}

TEST_F(AckSamplerTest, ClosedConnectionDropsItsSampleAndItsStatisticsAfterTwoSweeps) {
  AckSampler sampler;
  sampler.add(write_and_sample(100, 0));
  usleep(20'000);
  sampler.poll(1'000'000);  // recorded (untimed) under the connection's generation
  const std::uint32_t generation = slot_->generation.load();
  telemetry::AckLatency open;
  sampler.add_open_to(client_, generation, open);
  EXPECT_EQ(open.acked_before_first_poll, 1U);
  fd_table().retire(client_);  // closed, and its record never came
  sampler.sweep_closed(2'000'000'000);
  sampler.sweep_closed(2'500'000'000);  // within the sweep interval: no sweep
  telemetry::AckLatency still;
  sampler.add_open_to(client_, generation, still);
  EXPECT_EQ(still.acked_before_first_poll, 1U) << "one sweep only marks it";
  sampler.sweep_closed(3'000'000'000);
  EXPECT_EQ(sampler.take(client_, generation).acked_before_first_poll, 0U) << "dropped by the second";
  AckSample after_close{client_, generation, 1, 0, false};
  sampler.add(after_close);
  sampler.poll(4'000'000'000);
  EXPECT_FALSE(sampler.has_outstanding()) << "a sample of a closed connection is dropped";
}

}  // namespace
}  // namespace tcptune::shim
