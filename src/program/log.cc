#include "stoker/program/log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <memory>

namespace stoker::program {

void InitLogging(int rank, spdlog::level::level_enum level) {
  auto logger =
      std::make_shared<spdlog::logger>("stoker", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern(fmt::format("[%H:%M:%S.%e] [rank {}] [%l] %v", rank));
  const auto rank_level = rank == 0 ? level : std::max(level, spdlog::level::warn);
  logger->set_level(rank_level);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace stoker::program
