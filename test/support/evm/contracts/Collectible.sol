// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24; // OpenZeppelin 5.x's ERC721 needs 0.8.24

import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";

/**
 * TEST ONLY: an ERC-721 whose `mint` ANYONE may call, with the token id of their choice. `_mint`, not
 * `_safeMint`: minting to a contract that is no ERC721Receiver works too.
 */
contract Collectible is ERC721 {
    constructor(string memory name_, string memory symbol_) ERC721(name_, symbol_) {}

    /// TEST ONLY: unrestricted minting; reverts (ERC721InvalidSender) if `id` exists already.
    function mint(address to, uint256 id) external {
        _mint(to, id);
    }
}
