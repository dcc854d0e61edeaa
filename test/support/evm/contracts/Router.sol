// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IERC721} from "@openzeppelin/contracts/token/ERC721/IERC721.sol";

/**
 * TEST ONLY: a router-like spender. A user approves it (ERC-20 `approve`/`permit`, ERC-721
 * `setApprovalForAll`), and it moves the approved assets with transferFrom, as any approved spender does.
 *
 * A "drainer" is this same code with a malicious owner: the owner may move ANY approving account's assets
 * to ANY address. Everyone else may only move their own (`from == msg.sender`), like an honest router.
 */
contract Router is Ownable {
    using SafeERC20 for IERC20;

    error NotAllowed(address caller, address from);

    constructor(address initialOwner) Ownable(initialOwner) {}

    modifier allowedFor(address from) {
        if (msg.sender != from && msg.sender != owner()) revert NotAllowed(msg.sender, from);
        _;
    }

    /// ERC-20 `transferFrom(from, to, amount)`, as this contract (the spender).
    function pull(address token, address from, address to, uint256 amount) external allowedFor(from) {
        IERC20(token).safeTransferFrom(from, to, amount);
    }

    /// ERC-721 `transferFrom(from, to, id)`, as this contract (the operator). Plain transferFrom, not
    /// safeTransferFrom: the recipient need not be an ERC721Receiver, as drainers do it.
    function pullNft(address collection, address from, address to, uint256 id) external allowedFor(from) {
        IERC721(collection).transferFrom(from, to, id);
    }
}
