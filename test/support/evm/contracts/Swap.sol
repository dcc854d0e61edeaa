// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/**
 * TEST ONLY: a swap-like contract that trades ANY ERC-20 against ether at one fixed rate, out of its own
 * balances (a test funds it: mint tokens to it, send it ether). What a simulation sees is only the
 * ERC-20 Transfer events and the ether moves; the contract emits nothing of its own.
 *
 * `rate` is in token base units per wei: with rate 1000 and an 18-decimal token, 1 ether buys 1000 tokens.
 */
contract Swap {
    using SafeERC20 for IERC20;

    uint256 public immutable rate;

    error ZeroRate();
    error EtherTransferFailed();

    constructor(uint256 rate_) {
        if (rate_ == 0) revert ZeroRate();
        rate = rate_;
    }

    /// Ether in, `msg.value * rate` tokens out to the caller (reverts if the contract holds too few).
    function buy(address token) external payable returns (uint256 amount) {
        amount = msg.value * rate;
        IERC20(token).safeTransfer(msg.sender, amount);
    }

    /// Tokens in (pulled with transferFrom: the caller approves this contract first), `amount / rate` wei
    /// back to the caller (rounded down; reverts if the contract holds too little ether).
    function sell(address token, uint256 amount) external returns (uint256 value) {
        value = amount / rate;
        IERC20(token).safeTransferFrom(msg.sender, address(this), amount);
        (bool ok, ) = payable(msg.sender).call{value: value}("");
        if (!ok) revert EtherTransferFailed();
    }

    /// Plain ether transfers fund the `sell` side.
    receive() external payable {}
}
