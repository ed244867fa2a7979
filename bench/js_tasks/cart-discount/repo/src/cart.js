'use strict';

class Cart {
  constructor() {
    this.lines = [];
    this.percentOff = 0;
  }

  add(name, price, quantity = 1) {
    this.lines.push({ name, price, quantity });
    return this;
  }

  /** A discount in percent (0-100) on the whole cart. */
  applyDiscount(percent) {
    if (percent < 0 || percent > 100) {
      throw new RangeError(`discount must be between 0 and 100, not ${percent}`);
    }
    this.percentOff = percent;
    return this;
  }

  subtotal() {
    return this.lines.reduce((sum, line) => sum + line.price * line.quantity, 0);
  }

  /** What the customer pays: the subtotal less the discount, in cents rounded. */
  total() {
    const subtotal = this.subtotal();
    return Math.round((subtotal - this.percentOff) * 100) / 100;
  }
}

module.exports = { Cart };
