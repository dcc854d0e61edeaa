// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24; // OpenZeppelin 5.x's ERC20Permit and EIP712 need 0.8.24

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";

/**
 * TEST ONLY: an ERC-20 with ERC-2612 `permit` (EIP-712 domain: the token's name, version "1", the chain id,
 * the token's address) and a `mint` that ANYONE may call, so a test can hand out balances without an owner.
 * Nothing else is special: the Transfer and Approval events are OpenZeppelin's.
 */
contract PermitToken is ERC20, ERC20Permit {
    uint8 private immutable _decimals;

    constructor(string memory name_, string memory symbol_, uint8 decimals_)
        ERC20(name_, symbol_)
        ERC20Permit(name_)
    {
        _decimals = decimals_;
    }

    function decimals() public view override returns (uint8) {
        return _decimals;
    }

    /// TEST ONLY: unrestricted minting.
    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
