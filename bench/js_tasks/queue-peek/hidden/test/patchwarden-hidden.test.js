'use strict';
const test = require('node:test');
const assert = require('node:assert');
const Queue = require('../src/queue');

test('hidden: peek shows the next item and keeps it', () => {
  const q = new Queue();
  q.push('a');
  q.push('b');
  q.push('c');
  assert.strictEqual(q.peek(), 'a');
  assert.strictEqual(q.size, 3);
  assert.strictEqual(q.shift(), 'a');
  assert.strictEqual(q.peek(), 'b');
});
