'use strict';
const test = require('node:test');
const assert = require('node:assert');
const Queue = require('../src/queue');

test('first in, first out', () => {
  const q = new Queue();
  q.push(1);
  q.push(2);
  assert.strictEqual(q.shift(), 1);
  assert.strictEqual(q.size, 1);
});

test('peek on an empty queue', () => {
  assert.strictEqual(new Queue().peek(), undefined);
});
