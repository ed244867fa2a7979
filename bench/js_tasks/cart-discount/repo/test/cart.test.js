'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { Cart } = require('../src/cart');

test('adds lines', () => {
  const cart = new Cart().add('pen', 2, 3).add('pad', 4);
  assert.strictEqual(cart.subtotal(), 10);
});

test('total without discount', () => {
  assert.strictEqual(new Cart().add('pen', 2.5, 2).total(), 5);
});

test('refuses a discount over 100', () => {
  assert.throws(() => new Cart().applyDiscount(120), RangeError);
});
