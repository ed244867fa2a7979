'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { clamp, mean } = require('../src/numbers');

test('clamps a value below the minimum', () => {
  assert.strictEqual(clamp(-5, 0, 10), 0);
});

test('clamps a value above the maximum', () => {
  assert.strictEqual(clamp(15, 0, 10), 10);
});

test('keeps a value inside', () => {
  assert.strictEqual(clamp(5, 0, 10), 5);
});

test('means', () => {
  assert.strictEqual(mean([1, 2, 3]), 2);
  assert.strictEqual(mean([]), 0);
});
