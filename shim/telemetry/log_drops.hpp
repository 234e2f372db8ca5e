// Records a log on stderr could not take (stderr_stream.hpp), and the record that reports them.
#pragma once

#include <cstdint>

#include "record.hpp"

namespace tcptune::telemetry {

// Its pipe was full, or one record was longer than one write of PIPE_BUF bytes may be.
struct LogDrops {
  std::uint64_t full = 0;
  std::uint64_t too_long = 0;
  [[nodiscard]] std::uint64_t total() const { return full + too_long; }
};

// The `dropped` record for what was dropped since `reported` (the shim's and the supervisor's).
[[nodiscard]] Record log_drops_record(const LogDrops& now, const LogDrops& reported);

}  // namespace tcptune::telemetry
