// The framer finds message ends exactly where each protocol puts them, however the bytes are
// cut into writes, and gives up (for good) where it cannot follow the stream.
#include "message_framer.hpp"

#include <gtest/gtest.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "written_bytes.hpp"

namespace tcptune::shim {
namespace {

using config::Framing;
using namespace std::string_literals;

struct Stream {
  std::string bytes;
  std::set<std::size_t> boundaries;  // offsets after which a heartbeat may go
};

// Messages one after another; `boundary_after[i]` false: the stream is not at a boundary
// after message i (a handshake not finished yet).
Stream stream_of(const std::vector<std::string>& messages, const std::vector<bool>& boundary_after = {},
                 bool boundary_at_start = true) {
  Stream stream;
  if (boundary_at_start) {
    stream.boundaries.insert(0);
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    stream.bytes += messages[i];
    if (boundary_after.empty() || boundary_after[i]) {
      stream.boundaries.insert(stream.bytes.size());
    }
  }
  return stream;
}

// Fed one byte at a time, the framer is at a boundary after exactly the stream's boundaries.
void expect_boundaries_byte_by_byte(Framing framing, const Stream& stream) {
  MessageFramer framer;
  framer.start(framing, true);
  EXPECT_EQ(framer.at_boundary(), stream.boundaries.contains(0));
  for (std::size_t i = 0; i < stream.bytes.size(); ++i) {
    framer.consume(&stream.bytes[i], 1);
    ASSERT_EQ(framer.at_boundary(), stream.boundaries.contains(i + 1))
        << "after byte " << i + 1 << " of " << stream.bytes.size();
  }
  EXPECT_EQ(framer.loss(), FramingLoss::none);
}

// Cut into random writes (as a relay forwards what arrived), and each write's bytes passed over
// unseen where the framer can count them: the same boundaries.
void expect_boundaries_in_random_writes(Framing framing, const Stream& stream, unsigned seed) {
  std::mt19937 random(seed);
  for (int round = 0; round < 200; ++round) {
    MessageFramer framer;
    framer.start(framing, true);
    std::size_t offset = 0;
    while (offset < stream.bytes.size()) {
      const std::size_t left = stream.bytes.size() - offset;
      std::size_t size = std::uniform_int_distribution<std::size_t>(1, std::min<std::size_t>(left, 40))(random);
      if (round % 2 == 1) {  // as a sendfile would: counted lengths skipped, the rest read
        std::size_t fed = 0;
        while (fed < size) {
          if (const std::size_t skipped = framer.skippable(size - fed); skipped > 0) {
            framer.skip(skipped);
            fed += skipped;
          } else {
            framer.consume(&stream.bytes[offset + fed], 1);
            ++fed;
          }
        }
      } else {
        framer.consume(&stream.bytes[offset], size);
      }
      offset += size;
      ASSERT_EQ(framer.at_boundary(), stream.boundaries.contains(offset))
          << "round " << round << ", after " << offset << " of " << stream.bytes.size();
    }
    EXPECT_EQ(framer.loss(), FramingLoss::none);
  }
}

void expect_boundaries(Framing framing, const Stream& stream) {
  expect_boundaries_byte_by_byte(framing, stream);
  expect_boundaries_in_random_writes(framing, stream, 7);
}

TEST(MessageFramer, LinesEndAtNewlines) {
  expect_boundaries(Framing::lines, stream_of({"{\"a\":1}\n", "x\n", "a longer line with \r inside\n", "\n"}));
}

TEST(MessageFramer, Http1RequestsEndAfterTheirBodies) {
  expect_boundaries(
      Framing::http1_request,
      stream_of({"\r\n",  // a heartbeat, or the app's own empty line
                 "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
                 "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 8\r\n\r\n\r\n\r\nabcd",
                 "POST /c HTTP/1.1\r\ncontent-length: 99\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                 "5\r\nhe\nlo\r\n3;name=value\r\n\r\n\r\r\n10\r\n0123456789abcdef\r\n0\r\nX-Trailer: 1\r\n\r\n",
                 "PUT /y HTTP/1.1\nContent-Length:  2\n\nok", "POST /empty HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
                 // Empty list elements and an empty field add no coding (RFC 9110 section 5.6.1).
                 "POST /l HTTP/1.1\r\nTransfer-Encoding: chunked, ,\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                 "POST /m HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"
                 "Transfer-Encoding:\r\n\r\n1\r\nz\r\n0\r\n\r\n",
                 "DELETE /z HTTP/1.0\r\nX-Long-Header-Name-Beyond-Seventeen: Transfer-Encoding: chunked\r\n\r\n"}));
}

TEST(MessageFramer, RedisCommandsEndAfterTheirDeclaredLengths) {
  expect_boundaries(Framing::resp_request,
                    stream_of({"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
                               "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$6\r\na\r\n*\r\n\r\n",  // a value that looks like RESP
                               "\r\n",                                                // the heartbeat
                               "PING\r\n",                                            // an inline command
                               "*2\r\n$4\r\nECHO\r\n$-1\r\n", "*0\r\n", "*-1\r\n",
                               "*1\r\n$11\r\n\x00\x01\x02\xff\r\n\n*$\r\n\r\n"s}));
}

TEST(MessageFramer, StompFramesEndAtTheirNul) {
  // EOLs only follow frames: the stream's start is no place for one.
  expect_boundaries(Framing::stomp, stream_of({"CONNECT\r\naccept-version:1.2\r\nhost:/\r\n\r\n\0"s,
                                               "\n",  // a heart-beat
                                               "SEND\ndestination:/q\ncontent-length:5\n\nhe\0lo\0"s,
                                               "SEND\ndestination:/q\ncontent-length:3\ncontent-length:9\n\nabc\0"s,
                                               "SEND\ndestination:/q\nContent-Length:9\n\nno length\0"s, "\r\n",
                                               "MESSAGE\nsubscription:1\n\nbody\nwith lines\0"s},
                                              {}, false));
}

std::string amqp_frame(char type, std::uint16_t channel, const std::string& payload) {
  std::string frame(1, type);
  frame += static_cast<char>(channel >> 8);
  frame += static_cast<char>(channel & 0xff);
  const auto size = static_cast<std::uint32_t>(payload.size());
  for (int shift = 24; shift >= 0; shift -= 8) {
    frame += static_cast<char>((size >> shift) & 0xff);
  }
  return frame + payload + "\xce";
}

std::string amqp_method(std::uint16_t channel, std::uint16_t class_id, std::uint16_t method_id,
                        const std::string& args) {
  std::string payload{static_cast<char>(class_id >> 8), static_cast<char>(class_id & 0xff),
                      static_cast<char>(method_id >> 8), static_cast<char>(method_id & 0xff)};
  return amqp_frame(1, channel, payload + args);
}

TEST(MessageFramer, AmqpFramesEndAtTheFrameEndOnceTheHandshakeIsDone) {
  const std::string header = "AMQP\0\0\x09\x01"s;
  expect_boundaries(
      Framing::amqp091,
      stream_of({header, amqp_method(0, 10, 11, "start-ok\xce\xce"), amqp_method(0, 10, 31, "tune-ok"),
                 amqp_method(0, 10, 40, "/"),  // connection.open: the handshake ends
                 amqp_method(1, 20, 10, ""), amqp_method(1, 60, 40, "publish"),
                 amqp_frame(2, 1, std::string(40, '\xce')), amqp_frame(3, 1, "body\xce\x08"), amqp_frame(8, 0, "")},
                {false, false, false, true, true, true, true, true, true}, false));
  // The server's side: no protocol header, and open-ok ends its handshake.
  expect_boundaries(Framing::amqp091,
                    stream_of({amqp_method(0, 10, 10, "start"), amqp_method(0, 10, 41, ""), amqp_method(1, 60, 60, "")},
                              {false, true, true}, false));
}

// The framer's loss after `writes`, one call each.
FramingLoss loss_after(Framing framing, const std::vector<std::string>& writes, bool fresh = true) {
  MessageFramer framer;
  framer.start(framing, fresh);
  for (const std::string& bytes : writes) {
    framer.consume(bytes.data(), bytes.size());
  }
  if (framer.loss() != FramingLoss::none) {
    framer.consume("\r\n\r\n\n\0", 6);
    EXPECT_FALSE(framer.at_boundary()) << "lost stays lost";
  }
  return framer.loss();
}

TEST(MessageFramer, StreamsThatLeaveTheProtocolEndIt) {
  const std::string client_hello = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"s;
  EXPECT_EQ(loss_after(Framing::http1_request, {client_hello}), FramingLoss::tls);
  EXPECT_EQ(loss_after(Framing::resp_request, {client_hello}), FramingLoss::tls);
  EXPECT_EQ(loss_after(Framing::stomp, {client_hello}), FramingLoss::tls);
  EXPECT_EQ(loss_after(Framing::amqp091, {client_hello}), FramingLoss::tls);
  EXPECT_EQ(loss_after(Framing::lines, {"STARTTLS\r\n", client_hello}), FramingLoss::tls);
  EXPECT_EQ(loss_after(Framing::http1_request, {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"}), FramingLoss::http2);
  EXPECT_EQ(loss_after(Framing::http1_request, {"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n"}),
            FramingLoss::http_upgrade);
  EXPECT_EQ(loss_after(Framing::http1_request, {"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n"}),
            FramingLoss::http_connect);
  EXPECT_EQ(loss_after(Framing::http1_request, {"POST / HTTP/1.1\r\nContent-Length: 12x\r\n\r\n"}),
            FramingLoss::malformed);
  EXPECT_EQ(loss_after(Framing::http1_request, {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"}),
            FramingLoss::malformed);
  // obs-fold and an empty Content-Length: a server refuses them or reads them otherwise.
  EXPECT_EQ(loss_after(Framing::http1_request, {"POST / HTTP/1.1\r\nContent-Length:\r\n 5\r\n\r\nhello"}),
            FramingLoss::malformed);
  EXPECT_EQ(loss_after(Framing::http1_request, {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip,\r\n\tchunked\r\n\r\n"}),
            FramingLoss::malformed);
  EXPECT_EQ(loss_after(Framing::resp_request, {"*2\r\n:1\r\n"}), FramingLoss::malformed);
  EXPECT_EQ(loss_after(Framing::stomp, {"SEND\ncontent-length:1\n\nab\0"s}), FramingLoss::malformed);
  EXPECT_EQ(loss_after(Framing::amqp091, {amqp_frame(9, 0, "")}), FramingLoss::malformed);
  std::string bad_end = amqp_frame(8, 0, "");
  bad_end.back() = 'x';
  EXPECT_EQ(loss_after(Framing::amqp091, {bad_end}), FramingLoss::malformed);
  // A connection the shim found already carrying bytes: only a line protocol finds its place.
  EXPECT_EQ(loss_after(Framing::http1_request, {}, false), FramingLoss::adopted);
  EXPECT_EQ(loss_after(Framing::lines, {"tail of a line\n"}, false), FramingLoss::none);
}

TEST(MessageFramer, UnseenBytesAreCountedInsideADeclaredLengthAndLoseItElsewhere) {
  MessageFramer framer;
  framer.start(Framing::http1_request, true);
  const std::string head = "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n";
  framer.consume(head.data(), head.size());
  EXPECT_EQ(framer.skippable(100), 10U);
  framer.skip(4);
  EXPECT_FALSE(framer.at_boundary());
  framer.skip(6);
  EXPECT_TRUE(framer.at_boundary());
  EXPECT_EQ(framer.skippable(100), 0U);
  framer.skip(1);  // a request head the shim cannot see
  EXPECT_EQ(framer.loss(), FramingLoss::unseen_bytes);
  EXPECT_FALSE(framer.at_boundary());

  MessageFramer lines;
  lines.start(Framing::lines, true);
  lines.skip(5);  // a line protocol finds its place again at the next newline it sees
  EXPECT_FALSE(lines.at_boundary());
  lines.consume("x\n", 2);
  EXPECT_TRUE(lines.at_boundary());
  EXPECT_EQ(lines.loss(), FramingLoss::none);
}

TEST(MessageFramer, GuessedFramingLeavesTheDecisionToTheCaller) {
  MessageFramer framer;
  framer.start(Framing::guessed, true);
  EXPECT_FALSE(framer.follows_protocol());
  framer.consume("half a line", 11);
  EXPECT_TRUE(framer.at_boundary());
  EXPECT_EQ(framer.skippable(7), 7U);
}

// sendfile's bytes are read back from the file: a line protocol reads only the last byte, and
// a declared body is counted without reading it.
TEST(WrittenBytes, FileBytesAreReadBackFromWhereTheCallStarted) {
  char path[] = "/tmp/tcptune-framer-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  const std::string content = "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n\r\n";
  ASSERT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  MessageFramer framer;
  framer.start(Framing::http1_request, true);
  off_t offset = 20;  // as sendfile leaves it after moving the first 20 bytes
  feed_framer(framer, FileBytes{fd, &offset}, 20);
  EXPECT_FALSE(framer.at_boundary());
  offset = static_cast<off_t>(content.find("GET"));
  feed_framer(framer, FileBytes{fd, &offset}, static_cast<std::size_t>(offset) - 20);
  EXPECT_TRUE(framer.at_boundary());
  // Without an offset, the file position: sendfile moved it past what it sent.
  ASSERT_EQ(lseek(fd, static_cast<off_t>(content.size()) - 2, SEEK_SET), static_cast<off_t>(content.size()) - 2);
  feed_framer(framer, FileBytes{fd, nullptr}, content.size() - 2 - static_cast<std::size_t>(offset));
  EXPECT_FALSE(framer.at_boundary()) << "the head's last CRLF is still to come";
  EXPECT_EQ(framer.loss(), FramingLoss::none);
  close(fd);
}

TEST(WrittenBytes, IovecsAreFedUpToWhatWasAccepted) {
  MessageFramer framer;
  framer.start(Framing::lines, true);
  char first[] = "one\ntw";
  char second[] = "o\nthree";
  const iovec iov[] = {{first, 6}, {second, 7}};
  feed_framer(framer, IovecBytes{iov, 2}, 8);  // "one\ntwo\n"
  EXPECT_TRUE(framer.at_boundary());
  feed_framer(framer, IovecBytes{iov, 2}, 5);  // "one\nt"
  EXPECT_FALSE(framer.at_boundary());
}

TEST(WrittenBytes, BytesFromAPipeLoseAFramingThatMustSeeThem) {
  MessageFramer framer;
  framer.start(Framing::resp_request, true);
  feed_framer(framer, PipeBytes{-1}, 10);
  EXPECT_EQ(framer.loss(), FramingLoss::unseen_bytes);
}

}  // namespace
}  // namespace tcptune::shim
