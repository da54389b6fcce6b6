package server

import (
	"time"

	"github.com/robfig/cron/v3"
)

// DefaultMinCronInterval is Config.MinCronInterval when zero.
const DefaultMinCronInterval = time.Minute

// cronScanFirings and cronScanSpan bound the firings minCronGap looks at.
const (
	cronScanFirings = 10000
	cronScanSpan    = 400 * 24 * time.Hour
)

// minCronGap is the shortest time between two firings of sched after
// now: the delay of an "@every" schedule, and for a schedule of cron
// fields the shortest gap among its next firings (10,000 at most, within
// 400 days), which covers every minute, hour and day pattern a schedule
// can repeat. It returns 0 when sched fires less than twice.
func minCronGap(sched cron.Schedule, now time.Time) time.Duration {
	if d, ok := sched.(cron.ConstantDelaySchedule); ok {
		return d.Delay
	}
	var least time.Duration
	end := now.Add(cronScanSpan)
	prev := sched.Next(now)
	for range cronScanFirings {
		if prev.IsZero() || prev.After(end) {
			break
		}
		next := sched.Next(prev)
		if next.IsZero() {
			break
		}
		if gap := next.Sub(prev); least == 0 || gap < least {
			least = gap
		}
		prev = next
	}
	return least
}

// cronRateError refuses a schedule that fires more often than every min.
func cronRateError(schedule string, gap, min time.Duration) *apiError {
	return fieldErrorf(CodeInvalidField, "schedule",
		"field \"schedule\" %q fires %s after a firing, more often than this server allows: at most once every %s (Config.MinCronInterval)",
		schedule, gap, min)
}

// nextFiring is when cron j, due at now, fires next on sched: never
// sooner than min after now, whatever the schedule stored (one stored
// before the server had its minimum keeps to it too).
func (c *cronJob) nextFiring(sched cron.Schedule, now time.Time, min time.Duration) time.Time {
	next := c.after(sched, now)
	if earliest := now.Add(min); min > 0 && next.Before(earliest) {
		return earliest.UTC()
	}
	return next
}
