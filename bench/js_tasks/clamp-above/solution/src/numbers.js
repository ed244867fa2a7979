'use strict';

/** `value` kept within [min, max]. */
function clamp(value, min, max) {
  if (value < min) return min;
  if (value > max) return max;
  return value;
}

/** The average of a list of numbers (0 for none). */
function mean(values) {
  if (values.length === 0) return 0;
  return values.reduce((a, b) => a + b, 0) / values.length;
}

module.exports = { clamp, mean };
