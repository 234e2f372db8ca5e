#include "log_drops.hpp"

namespace tcptune::telemetry {

Record log_drops_record(const LogDrops& now, const LogDrops& reported) {
  Record record("dropped");
  record.add("records", now.total() - reported.total())
      .add("stderr_full", now.full - reported.full)
      .add("too_long", now.too_long - reported.too_long)
      .add("reason",
           "stderr could not take them: its pipe was full (its reader is behind or reads nothing), or a "
           "record was longer than one write of PIPE_BUF bytes");
  return record;
}

}  // namespace tcptune::telemetry
