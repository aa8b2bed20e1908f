// How many native subscriptions may be open: per connection (subscriptions and tails) and
// across the daemon (`--subscriptions-per-connection-max`, `--subscriptions-max`). Each costs
// memory for as long as it is open, so without a bound one client could grow eddyd until the
// kernel kills it. A subscribe past either bound is refused with `limitExceeded` and changes
// nothing.

import EddyModel

struct SubscriptionBounds: Sendable {
    var perConnection = Limits.subscriptionsPerConnectionMax
    var total = Limits.subscriptionsMax
}
