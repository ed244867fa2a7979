'use strict';
const test = require('node:test');
const assert = require('node:assert');
const query = require('..');

test('hidden: repeated keys, in order, and single keys stay strings', () => {
  assert.deepEqual(query.parse('x=1&y=2&x=3&x=4'), { x: ['1', '3', '4'], y: '2' });
  assert.deepEqual(query.parse('only=one'), { only: 'one' });
  assert.strictEqual(query.stringify(query.parse('k=a&k=b')), 'k=a&k=b');
});
