#include <catch2/catch.hpp>

#include "base/error.h"
#include "training/lr_schedule.h"

using namespace lockstep;

TEST_CASE("constant, step and cosine schedules", "[schedule]") {
  LrSchedule s{ScheduleKind::constant, 0.4f};
  REQUIRE(s.at(0.0) == 0.4f);
  REQUIRE(s.at(7.5) == 0.4f);

  s.kind = ScheduleKind::step;
  s.step_epochs = 2.0;
  s.gamma = 0.5f;
  REQUIRE(s.at(1.9) == Approx(0.4f));
  REQUIRE(s.at(2.0) == Approx(0.2f));
  REQUIRE(s.at(4.5) == Approx(0.1f));

  s.kind = ScheduleKind::cosine;
  s.total_epochs = 10.0;
  REQUIRE(s.at(0.0) == Approx(0.4f));
  REQUIRE(s.at(5.0) == Approx(0.2f));
  REQUIRE(s.at(10.0) == Approx(0.0f).margin(1e-7));
}

TEST_CASE("warmup rises linearly to the base rate", "[schedule]") {
  LrSchedule s{ScheduleKind::cosine, 1.0f, 2.0, 12.0};
  REQUIRE(s.at(0.0) < 0.01f);
  REQUIRE(s.at(1.0) == Approx(0.5f).epsilon(1e-3));
  REQUIRE(s.at(2.0) == Approx(1.0f));
  REQUIRE(s.at(7.0) == Approx(0.5f));  // cosine over the 10 epochs after warmup
}

TEST_CASE("unknown schedule names are refused", "[schedule]") {
  REQUIRE(parse_schedule("cosine") == ScheduleKind::cosine);
  REQUIRE_THROWS_WITH(parse_schedule("linear"), Catch::Contains("unknown schedule 'linear'"));
}
