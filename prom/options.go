package prom

import "github.com/prometheus/client_golang/prometheus"

// Option configures a collector made by [New] or [NewCollector].
type Option func(*config)

// config holds every option's value.
type config struct {
	constLabels prometheus.Labels
	classes     bool // per-class series: off by default for New, on for NewCollector
}

// WithConstLabels adds labels with fixed values to every series of the
// collector, for example the tenant or shard an allocator serves. The names
// "allocator" and "class" are reserved: using them, or an invalid label
// name or value, makes registering the collector fail with an error that
// says so. Later calls add to the labels of earlier ones.
func WithConstLabels(labels prometheus.Labels) Option {
	return func(c *config) {
		if c.constLabels == nil {
			c.constLabels = make(prometheus.Labels, len(labels))
		}
		for k, v := range labels {
			c.constLabels[k] = v
		}
	}
}

// WithClasses adds the per-class series (memkit_class_*): eight per size
// class of each allocator, 512 for a pool of 64 classes. [New] leaves them
// out unless given this option.
func WithClasses() Option {
	return func(c *config) { c.classes = true }
}

// WithoutClasses drops the per-class series (memkit_class_*), leaving the
// allocator-wide ones. It is the default of [New]; [NewCollector] exports
// the per-class series unless given this option. The allocator's ReadStats
// still fills its class rows.
func WithoutClasses() Option {
	return func(c *config) { c.classes = false }
}
