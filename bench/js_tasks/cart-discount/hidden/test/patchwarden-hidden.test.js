'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { Cart } = require('../src/cart');

test('hidden: a discount is a percentage of the subtotal', () => {
  assert.strictEqual(new Cart().add('lamp', 200).applyDiscount(10).total(), 180);
  assert.strictEqual(new Cart().add('pen', 3, 3).applyDiscount(50).total(), 4.5);
  assert.strictEqual(new Cart().add('pen', 3).applyDiscount(100).total(), 0);
});
