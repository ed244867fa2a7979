'use strict';
const test = require('node:test');
const assert = require('node:assert');
const query = require('..');

test('parses pairs', () => {
  assert.deepEqual(query.parse('?a=1&b=x+y'), { a: '1', b: 'x y' });
});

test('keeps every value of a repeated key', () => {
  assert.deepEqual(query.parse('tag=a&tag=b'), { tag: ['a', 'b'] });
});

test('stringifies arrays as repeated keys', () => {
  assert.strictEqual(query.stringify({ tag: ['a', 'b'], n: 1 }), 'tag=a&tag=b&n=1');
});
