'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { clamp } = require('../src/numbers');

test('hidden: clamps to both bounds', () => {
  assert.strictEqual(clamp(11, -3, 7), 7);
  assert.strictEqual(clamp(-4, -3, 7), -3);
  assert.strictEqual(clamp(7, -3, 7), 7);
});
